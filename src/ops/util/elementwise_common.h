// Shared machinery for the elementwise op family (unary math, activations, binary arithmetic,
// comparisons, logical/bitwise ops, variadic ops, Where, Clip, Cast): type lists to dispatch over,
// generic kernels that turn a per-element lambda into a whole op, integer arithmetic without undefined
// behaviour, and well-defined numeric conversions.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/op.h"
#include "ops/util/broadcast.h"

namespace ferry::ops::ew {

// ---------------------------------------------------------------------------------------------------
// Type lists. dispatch_in only instantiates the lambda for the listed types, so a lambda may use
// operations (e.g. std::sqrt, ~x) that only make sense for those types.
template <class... Ts>
struct TypeList {};

using FloatTypes = TypeList<float, double, float16, bfloat16>;
using SignedIntTypes = TypeList<int8_t, int16_t, int32_t, int64_t>;
using UnsignedIntTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = TypeList<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using SignedTypes = TypeList<float, double, float16, bfloat16, int8_t, int16_t, int32_t, int64_t>;
using NumericTypes =
    TypeList<float, double, float16, bfloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using AllTypes = TypeList<float, double, float16, bfloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                          uint32_t, uint64_t, bool>;
using BoolTypes = TypeList<bool>;

template <class... Ts, class F>
bool dispatch_in(TypeList<Ts...>, DType t, F&& f) {
  return ((t == dtype_v<Ts> ? (f(Ts{}), true) : false) || ...);
}

// ---------------------------------------------------------------------------------------------------
// Numeric helpers.

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// An unsigned type at least as wide as `unsigned`, so that wrap-around arithmetic on T never goes
// through (overflowing) signed int promotion.
template <class T>
using wide_unsigned_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Two's-complement wrap-around arithmetic (what numpy and every runtime do), without signed overflow.
template <class T>
T wrap_add(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T>
T wrap_neg(T a) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}

// The value as the type kernels compute in (float for halves).
template <class T>
compute_t<T> widen(T v) {
  return static_cast<compute_t<T>>(v);
}

template <class T>
bool is_nan_value(T v) {
  if constexpr (is_float_like_v<T>)
    return std::isnan(static_cast<double>(widen(v)));
  else
    return false;
}

// Correctly rounded double -> float16 / bfloat16 (going through float would round twice).
float16 double_to_float16(double d);
bfloat16 double_to_bfloat16(double d);

// Floating value -> integer type, defined for every input: NaN gives 0; the value is truncated toward
// zero; values that fit int64 (or uint64 for a uint64 target) wrap modulo 2^bits like the x86 / numpy
// astype path does (-1.0 -> uint8 255); anything beyond saturates.
template <class To>
To float_to_int(double v) {
  if (std::isnan(v)) return To(0);
  double t = std::trunc(v);
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (t >= 0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
  }
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<To>(static_cast<int64_t>(t));
  return t < 0 ? std::numeric_limits<To>::min() : std::numeric_limits<To>::max();
}

// numpy astype semantics between any two ferry element types, with the conversions above.
template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_float_like_v<From>)
      return static_cast<double>(widen(v)) != 0.0;  // NaN -> true, as in numpy
    else
      return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(v ? 1 : 0);
  } else if constexpr (std::is_same_v<To, float16>) {
    if constexpr (std::is_same_v<From, float> || is_half_v<From>)
      return float16(static_cast<float>(v));
    else
      return double_to_float16(static_cast<double>(v));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    if constexpr (std::is_same_v<From, float> || is_half_v<From>)
      return bfloat16(static_cast<float>(v));
    else
      return double_to_bfloat16(static_cast<double>(v));
  } else if constexpr (is_int_v<To> && is_float_like_v<From>) {
    return float_to_int<To>(static_cast<double>(widen(v)));
  } else {
    return static_cast<To>(widen(v));
  }
}

// ---------------------------------------------------------------------------------------------------
// ONNX TensorProto element types (the `to` attribute of Cast and friends).

// The ferry dtype for an ONNX elem type, or an error that names the type ("float8e4m3fn is not
// supported by ferry").
Result<DType> dtype_from_onnx_elem_type(int64_t elem_type, const std::string& what);

// ---------------------------------------------------------------------------------------------------
// Kernel helpers.

// The tensor input i, or an error when it is missing or not a tensor.
Result<const Tensor*> tensor_input(const KernelContext& ctx, int i);

Status unsupported_dtype(const KernelContext& ctx, DType t, int input = 0);

// out = f(x) with the same dtype. `f` receives compute_t<T> and returns something convertible to T.
// The output comes from ctx.allocate_output_uninit (every element is written), so it can use the
// runtime's planned arena slot.
template <class List, class F>
Status unary_same(KernelContext& ctx, List types, F&& f) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  Status st;
  bool ok = dispatch_in(types, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    Result<Tensor*> r = ctx.allocate_output_uninit(0, x->dtype(), x->dims());
    if (!r.ok()) {
      st = r.status();
      return;
    }
    const T* px = x->data<T>();
    T* po = (*r)->data<T>();
    for (int64_t i = 0, n = x->numel(); i < n; ++i) po[i] = static_cast<T>(f(widen(px[i])));
  });
  if (!ok) return unsupported_dtype(ctx, x->dtype());
  return st;
}

// out(bool) = pred(x).
template <class List, class F>
Status unary_to_bool(KernelContext& ctx, List types, F&& pred) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  Status st;
  bool ok = dispatch_in(types, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    Result<Tensor> r = unary_map<T, bool>(*x, DType::kBool, [&](T v) { return static_cast<bool>(pred(widen(v))); });
    if (!r.ok()) st = r.status();
    else ctx.set_output(0, std::move(r).value());
  });
  if (!ok) return unsupported_dtype(ctx, x->dtype());
  return st;
}

Status check_same_dtype(const KernelContext& ctx, const Tensor& a, const Tensor& b, int ia = 0, int ib = 1);

// out = f(a, b) with numpy broadcasting; both inputs and the output share one dtype. `f` receives
// compute_t<T> values and returns something convertible to T.
template <class List, class F>
Result<Tensor> broadcast_same(const Tensor& a, const Tensor& b, List types, F&& f, bool* dtype_ok) {
  Result<Tensor> out = Status::internal("unset");
  *dtype_ok = dispatch_in(types, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    out = binary_broadcast<T, T, T>(a, b, a.dtype(), [&](T x, T y) { return static_cast<T>(f(widen(x), widen(y))); });
  });
  return out;
}

template <class List, class F>
Status binary_same(KernelContext& ctx, List types, F&& f) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, tensor_input(ctx, 1));
  FERRY_RETURN_IF_ERROR(check_same_dtype(ctx, *a, *b));
  // Output through ctx.allocate_output_uninit (every element is written), so it can use the arena.
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(a->dims(), b->dims()));
  Status st;
  bool ok = dispatch_in(types, a->dtype(), [&](auto tag) {
    using T = decltype(tag);
    Result<Tensor*> r = ctx.allocate_output_uninit(0, a->dtype(), dims);
    if (!r.ok()) {
      st = r.status();
      return;
    }
    const T* pa = a->data<T>();
    const T* pb = b->data<T>();
    T* po = (*r)->data<T>();
    for_each_broadcast(dims, a->dims(), b->dims(),
                       [&](int64_t o, int64_t ia, int64_t ib) { po[o] = static_cast<T>(f(widen(pa[ia]), widen(pb[ib]))); });
  });
  if (!ok) return unsupported_dtype(ctx, a->dtype());
  return st;
}

// out(bool) = pred(a, b) with broadcasting; a and b share a dtype. `pred` receives compute_t values.
template <class List, class F>
Status binary_to_bool(KernelContext& ctx, List types, F&& pred) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, tensor_input(ctx, 1));
  FERRY_RETURN_IF_ERROR(check_same_dtype(ctx, *a, *b));
  Result<Tensor> out = Status::internal("unset");
  bool ok = dispatch_in(types, a->dtype(), [&](auto tag) {
    using T = decltype(tag);
    out = binary_broadcast<T, T, bool>(*a, *b, DType::kBool,
                                       [&](T x, T y) { return static_cast<bool>(pred(widen(x), widen(y))); });
  });
  if (!ok) return unsupported_dtype(ctx, a->dtype());
  if (!out.ok()) return out.status();
  ctx.set_output(0, std::move(out).value());
  return Status();
}

// Calls f(out_index, a_index, b_index, c_index) over the broadcast of three shapes (Where).
template <class F>
void for_each_broadcast3(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& a_dims,
                         const std::vector<int64_t>& b_dims, const std::vector<int64_t>& c_dims, F&& f) {
  const int r = static_cast<int>(out_dims.size());
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  if (n == 0) return;
  std::vector<int64_t> sa = broadcast_strides(a_dims, out_dims), sb = broadcast_strides(b_dims, out_dims),
                       sc = broadcast_strides(c_dims, out_dims);
  std::vector<int64_t> idx(r, 0);
  int64_t ia = 0, ib = 0, ic = 0;
  for (int64_t o = 0; o < n; ++o) {
    f(o, ia, ib, ic);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < out_dims[d]) {
        ia += sa[d];
        ib += sb[d];
        ic += sc[d];
        break;
      }
      ia -= sa[d] * (out_dims[d] - 1);
      ib -= sb[d] * (out_dims[d] - 1);
      ic -= sc[d] * (out_dims[d] - 1);
      idx[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Schema helpers.

// A one-input one-output op whose output has the input's type and shape.
void add_unary_schema(OpRegistry& r, const std::string& op, int since, KernelFn kernel, int until = 1000);
// A two-input op with a broadcast output of dtype `out` (kUndefined: input 0's).
void add_binary_schema(OpRegistry& r, const std::string& op, int since, KernelFn kernel,
                       DType out = DType::kUndefined, int until = 1000);

}  // namespace ferry::ops::ew
