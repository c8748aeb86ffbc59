// TopK: the k largest (or, with largest=0, smallest) elements along `axis` (default -1) and their int64
// indices. k is an attribute before opset 10 and a one-element int64 input from then on. Results are
// always sorted (sorted=0 leaves the order unspecified, so sorted output conforms); equal values keep
// the lower index first, and NaN counts as larger than every number.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ops/op.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Result<int64_t> requested_k(const KernelContext& ctx) {
  if (ctx.opset() < 10) return ctx.node().attr_int("k", -1);
  if (!ctx.has_input(1)) return Status::invalid("TopK needs the k input");
  const Tensor& k = ctx.input(1);
  if (k.numel() != 1 || is_floating(k.dtype())) return Status::invalid("TopK: k must be one integer, got " + k.describe());
  return k.as_int64(0);
}

template <class T>
void top_k_typed(const Tensor& x, const AxisSplit& s, int64_t k, bool largest, Tensor& values, Tensor& indices) {
  using C = compute_t<T>;
  const T* px = x.data<T>();
  T* pv = values.data<T>();
  int64_t* pi = indices.data<int64_t>();
  std::vector<int64_t> order(static_cast<size_t>(s.n));
  std::vector<C> row(static_cast<size_t>(s.n));
  // Strict weak order: "a comes before b". NaN sorts as the largest value.
  auto before = [&](int64_t a, int64_t b) {
    const C va = row[a], vb = row[b];
    if constexpr (is_float_like_v<T>) {
      const bool na = std::isnan(static_cast<double>(va)), nb = std::isnan(static_cast<double>(vb));
      if (na || nb) {
        if (na && nb) return a < b;
        return largest ? na : nb;
      }
    }
    if (va != vb) return largest ? va > vb : va < vb;
    return a < b;
  };
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      for (int64_t j = 0; j < s.n; ++j) row[j] = static_cast<C>(px[s.at(o, j, i)]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = (o * k + j) * s.inner + i;
        pv[dst] = px[s.at(o, order[j], i)];
        pi[dst] = order[j];
      }
    }
  }
}

Status top_k_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return Status::invalid("TopK needs an input of rank >= 1");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx.node(), -1, x.rank()));
  FERRY_ASSIGN_OR_RETURN(int64_t k, requested_k(ctx));
  if (k < 0 || k > x.dim(static_cast<int>(axis)))
    return Status::invalid("TopK: k = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) +
                           " of input " + x.describe());
  const bool largest = ctx.opset() < 11 || ctx.node().attr_int("largest", 1) != 0;
  std::vector<int64_t> out_dims = x.dims();
  out_dims[axis] = k;
  FERRY_ASSIGN_OR_RETURN(Tensor * values, ctx.allocate_output(0, x.dtype(), out_dims));
  Tensor* indices = nullptr;
  Tensor scratch;
  if (ctx.wants_output(1)) {
    FERRY_ASSIGN_OR_RETURN(indices, ctx.allocate_output(1, DType::kInt64, out_dims));
  } else {
    FERRY_ASSIGN_OR_RETURN(scratch, Tensor::create(DType::kInt64, out_dims));
    indices = &scratch;
  }
  const AxisSplit s = split_at_axis(x.dims(), axis);
  bool handled = dispatch_numeric(x.dtype(), [&](auto tag) {
    top_k_typed<decltype(tag)>(x, s, k, largest, *values, *indices);
  });
  if (!handled) return Status::unsupported("TopK: unsupported dtype " + x.describe());
  return Status();
}

Status top_k_infer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  std::optional<Shape> out;
  if (in && *in && !(*in)->empty()) {
    const int64_t rank = static_cast<int64_t>((*in)->size());
    FERRY_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx.node(), -1, rank));
    out = **in;
    (*out)[axis] = Dim();
    if (ctx.opset() < 10) {
      (*out)[axis] = Dim(ctx.node().attr_int("k", -1));
    } else if (const Tensor* k = ctx.input_constant(1); k && k->numel() == 1) {
      (*out)[axis] = Dim(k->as_int64(0));
    }
  }
  ctx.set_output(0, dt, out);
  ctx.set_output(1, DType::kInt64, out);
  return Status();
}

}  // namespace

void register_top_k(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "TopK",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 2,
      .infer = top_k_infer,
      .kernel = top_k_kernel,
  });
}

}  // namespace ferry::ops
