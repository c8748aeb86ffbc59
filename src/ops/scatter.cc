// ScatterElements (and its deprecated alias Scatter) and ScatterND: copy `data`, then write `updates` at
// the indexed positions, combining with the existing value per `reduction` (none/add/mul/max/min).
// Updates are applied in row-major order of the indices, so with duplicates and no reduction the last
// one wins, as in the ONNX reference.
#include <cmath>
#include <type_traits>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Result<Reduction> reduction_of(const ir::Node& n) {
  std::string r = n.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return Status::invalid("unknown reduction '" + r + "' (expected none, add, mul, max or min)");
}

template <class T>
T combine(T a, T b, Reduction r) {
  if (r == Reduction::kNone) return b;
  if constexpr (std::is_same_v<T, bool>) {
    // numpy on bools: add/max are logical or, mul/min logical and.
    return (r == Reduction::kAdd || r == Reduction::kMax) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    switch (r) {
      case Reduction::kAdd: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Reduction::kMul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Reduction::kMax: return a > b ? a : b;
      default: return a < b ? a : b;
    }
  } else {
    using C = compute_t<T>;
    C x = static_cast<C>(a), y = static_cast<C>(b);
    switch (r) {
      case Reduction::kAdd: return T(x + y);
      case Reduction::kMul: return T(x * y);
      case Reduction::kMax: return (std::isnan(x) || std::isnan(y)) ? T(x + y) : T(x > y ? x : y);
      default: return (std::isnan(x) || std::isnan(y)) ? T(x + y) : T(x < y ? x : y);
    }
  }
}

Result<std::vector<int64_t>> index_values(const Tensor& t) {
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return Status::invalid("indices must be int32 or int64, got " + dtype_str(t.dtype()));
  return t.to_int64_vector();
}

Status scatter_elements_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, tensor_input(ctx, 1, "indices"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* upd, tensor_input(ctx, 2, "updates"));
  FERRY_ASSIGN_OR_RETURN(Reduction red, reduction_of(ctx.node()));
  if (x->rank() == 0) return Status::invalid("data must have rank >= 1");
  if (ind->rank() != x->rank() || ind->dims() != upd->dims())
    return Status::invalid("indices " + ind->describe() + " and updates " + upd->describe() +
                           " must have the same shape and the rank of data " + x->describe());
  if (upd->dtype() != x->dtype())
    return Status::invalid("updates are " + dtype_str(upd->dtype()) + " but data is " + dtype_str(x->dtype()));
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), x->rank()));
  for (int d = 0; d < x->rank(); ++d)
    if (d != axis && ind->dims()[d] > x->dims()[d])
      return Status::invalid("indices " + ind->describe() + " are larger than data " + x->describe() + " in dim " +
                             std::to_string(d));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> idx, index_values(*ind));
  Tensor out = x->clone();
  const std::vector<int64_t> xst = strides_of(x->dims());
  const int r = x->rank();
  const int64_t dim = x->dims()[axis];
  // Resolve every target offset first so a bad index fails before any write.
  std::vector<int64_t> target(idx.size());
  std::vector<int64_t> pos(r, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) {
    int64_t v = idx[i];
    if (v < -dim || v >= dim)
      return Status::invalid("indices[" + std::to_string(i) + "] = " + std::to_string(v) + " is out of range for axis " +
                             std::to_string(axis) + " of size " + std::to_string(dim));
    if (v < 0) v += dim;
    int64_t off = 0;
    for (int d = 0; d < r; ++d) off += (d == axis ? v : pos[d]) * xst[d];
    target[i] = off;
    for (int d = r - 1; d >= 0; --d) {
      if (++pos[d] < ind->dims()[d]) break;
      pos[d] = 0;
    }
  }
  bool ok = dispatch_all(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* u = upd->data<T>();
    for (size_t i = 0; i < target.size(); ++i) o[target[i]] = combine<T>(o[target[i]], u[i], red);
  });
  if (!ok) return unsupported_dtype("ScatterElements", x->dtype());
  ctx.set_output(0, std::move(out));
  return Status();
}

Status scatter_nd_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, tensor_input(ctx, 1, "indices"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* upd, tensor_input(ctx, 2, "updates"));
  FERRY_ASSIGN_OR_RETURN(Reduction red, reduction_of(ctx.node()));
  if (ind->dtype() != DType::kInt64) return Status::invalid("ScatterND indices must be int64");
  if (upd->dtype() != x->dtype())
    return Status::invalid("updates are " + dtype_str(upd->dtype()) + " but data is " + dtype_str(x->dtype()));
  const int64_t r = x->rank(), q = ind->rank();
  if (r < 1 || q < 1) return Status::invalid("ScatterND data and indices must have rank >= 1");
  const int64_t k = ind->dims()[q - 1];
  if (k < 1 || k > r) return Status::invalid("indices' last dim " + std::to_string(k) + " must be in [1, " +
                                             std::to_string(r) + "]");
  // updates shape = indices.shape[:-1] + data.shape[k:]
  std::vector<int64_t> want(ind->dims().begin(), ind->dims().end() - 1);
  want.insert(want.end(), x->dims().begin() + k, x->dims().end());
  if (upd->dims() != want)
    return Status::invalid("updates " + upd->describe() + " must have shape " + dims_to_string(want));
  int64_t inner = 1, tuples = 1;
  for (int64_t d = k; d < r; ++d) inner *= x->dims()[d];
  for (int64_t d = 0; d < q - 1; ++d) tuples *= ind->dims()[d];
  const std::vector<int64_t> xst = strides_of(x->dims());
  const int64_t* iv = ind->data<int64_t>();
  std::vector<int64_t> target(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = x->dims()[j];
      int64_t v = iv[t * k + j];
      if (v < -dim || v >= dim)
        return Status::invalid("indices[" + std::to_string(t * k + j) + "] = " + std::to_string(v) +
                               " is out of range for axis " + std::to_string(j) + " of size " + std::to_string(dim));
      if (v < 0) v += dim;
      off += v * xst[j];
    }
    target[t] = off;
  }
  Tensor out = x->clone();
  bool ok = dispatch_all(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* u = upd->data<T>();
    for (int64_t t = 0; t < tuples; ++t)
      for (int64_t e = 0; e < inner; ++e) o[target[t] + e] = combine<T>(o[target[t] + e], u[t * inner + e], red);
  });
  if (!ok) return unsupported_dtype("ScatterND", x->dtype());
  ctx.set_output(0, std::move(out));
  return Status();
}
}  // namespace

void register_scatter(OpRegistry& r) {
  auto same = [](InferContext& ctx) { return infer_same_as_input(ctx); };
  r.add(OpSchema{.op_type = "Scatter", .since_version = 9, .min_inputs = 3, .max_inputs = 3, .infer = same,
                 .kernel = scatter_elements_kernel});
  r.add(OpSchema{.op_type = "ScatterElements", .since_version = 11, .min_inputs = 3, .max_inputs = 3,
                 .infer = same, .kernel = scatter_elements_kernel});
  r.add(OpSchema{.op_type = "ScatterND", .since_version = 11, .min_inputs = 3, .max_inputs = 3, .infer = same,
                 .kernel = scatter_nd_kernel});
}

}  // namespace ferry::ops
