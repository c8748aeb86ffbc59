// Binary arithmetic with numpy broadcasting: Add Sub Mul Div Pow Mod.
// Integers wrap around on overflow (two's complement, as numpy does). Integer division truncates
// toward zero (C semantics, which the ONNX reference adopted); integer division or modulo by zero is
// an error rather than a crash.
#include <cmath>

#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

// Integer division by zero has no answer; remember that it happened and report it after the loop.
struct DivByZero {
  bool hit = false;
  Status status(const KernelContext& ctx) const {
    return hit ? Status::invalid(ctx.node().op_type + ": integer division by zero") : Status();
  }
};

template <class T>
T int_div(T a, T b, DivByZero& z) {
  if (b == 0) {
    z.hit = true;
    return T(0);
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_neg(a);  // MIN / -1 overflows (traps on x86)
  }
  return static_cast<T>(a / b);
}

// fmod = 1: C remainder (sign of the dividend). fmod = 0: numpy's mod (sign of the divisor).
template <class T>
T int_mod(T a, T b, bool c_fmod, DivByZero& z) {
  if (b == 0) {
    z.hit = true;
    return T(0);
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
    T rem = static_cast<T>(a % b);
    if (!c_fmod && rem != 0 && ((rem < 0) != (b < 0))) rem = static_cast<T>(rem + b);
    return rem;
  } else {
    return static_cast<T>(a % b);
  }
}

// numpy's floating mod (npy_divmod): the result takes the divisor's sign, a zero result is a signed
// zero with the divisor's sign, and x mod 0 is NaN.
template <class C>
C float_mod(C a, C b) {
  C m = std::fmod(a, b);
  if (b == C(0)) return m;
  if (m != C(0)) {
    if ((b < C(0)) != (m < C(0))) m += b;
  } else {
    m = std::copysign(C(0), b);
  }
  return m;
}

Status div_kernel(KernelContext& ctx) {
  DivByZero z;
  FERRY_RETURN_IF_ERROR(binary_same(ctx, NumericTypes{}, [&](auto a, auto b) {
    if constexpr (is_int_v<decltype(a)>)
      return int_div(a, b, z);
    else
      return a / b;
  }));
  return z.status(ctx);
}

Status mod_kernel(KernelContext& ctx) {
  const int64_t fmod = ctx.node().attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) return Status::invalid("Mod: attribute fmod must be 0 or 1");
  DivByZero z;
  FERRY_RETURN_IF_ERROR(binary_same(ctx, NumericTypes{}, [&](auto a, auto b) {
    if constexpr (is_int_v<decltype(a)>)
      return int_mod(a, b, fmod == 1, z);
    else
      return fmod == 1 ? std::fmod(a, b) : float_mod(a, b);
  }));
  return z.status(ctx);
}

// Integer power by squaring with wrap-around. A negative exponent has a truncated real result:
// 1 for base 1, +-1 for base -1, 0 otherwise (numpy refuses; this is the value it would truncate to).
template <class T, class E>
T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if constexpr (std::is_signed_v<T>) {
        if (base == T(-1)) return (exp % 2 == 0) ? T(1) : T(-1);
      }
      return T(0);
    }
  }
  T result = T(1);
  uint64_t e = static_cast<uint64_t>(exp);
  while (e) {
    if (e & 1u) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

// Pow allows the exponent a different type than the base; the output has the base's type. Mixed
// types compute in double (numpy promotes float32 ** int32 to float64) and convert back.
template <class TB, class TE>
TB pow_value(TB base, TE exp) {
  if constexpr (is_int_v<TB> && is_int_v<TE>) {
    return int_pow(base, exp);
  } else if constexpr (std::is_same_v<TB, TE>) {
    return static_cast<TB>(std::pow(widen(base), widen(exp)));
  } else {
    return convert<TB>(std::pow(static_cast<double>(widen(base)), static_cast<double>(widen(exp))));
  }
}

Status pow_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, tensor_input(ctx, 1));
  Result<Tensor> out = Status::internal("unset");
  bool exp_ok = true;
  bool base_ok = dispatch_in(NumericTypes{}, a->dtype(), [&](auto base_tag) {
    using TB = decltype(base_tag);
    exp_ok = dispatch_in(NumericTypes{}, b->dtype(), [&](auto exp_tag) {
      using TE = decltype(exp_tag);
      out = binary_broadcast<TB, TE, TB>(*a, *b, a->dtype(), [](TB x, TE y) { return pow_value(x, y); });
    });
  });
  if (!base_ok) return unsupported_dtype(ctx, a->dtype(), 0);
  if (!exp_ok) return unsupported_dtype(ctx, b->dtype(), 1);
  if (!out.ok()) return out.status();
  ctx.set_output(0, std::move(out).value());
  return Status();
}
}  // namespace

void register_binary_arith(OpRegistry& r) {
  add_binary_schema(r, "Add", 7, [](KernelContext& ctx) {
    return binary_same(ctx, NumericTypes{}, [](auto a, auto b) {
      if constexpr (is_int_v<decltype(a)>) return wrap_add(a, b);
      else return a + b;
    });
  });
  add_binary_schema(r, "Sub", 7, [](KernelContext& ctx) {
    return binary_same(ctx, NumericTypes{}, [](auto a, auto b) {
      if constexpr (is_int_v<decltype(a)>) return wrap_sub(a, b);
      else return a - b;
    });
  });
  add_binary_schema(r, "Mul", 7, [](KernelContext& ctx) {
    return binary_same(ctx, NumericTypes{}, [](auto a, auto b) {
      if constexpr (is_int_v<decltype(a)>) return wrap_mul(a, b);
      else return a * b;
    });
  });
  add_binary_schema(r, "Div", 7, div_kernel);
  add_binary_schema(r, "Mod", 10, mod_kernel);
  add_binary_schema(r, "Pow", 7, pow_kernel);
}

}  // namespace ferry::ops
