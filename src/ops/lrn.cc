// LRN (local response normalization across channels) on X [N, C, D1, ...]:
// y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Status lrn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ir::Node& node = ctx.node();
  if (!node.has_attr("size")) return Status::invalid("LRN needs attribute size");
  const int64_t size = node.attr_int("size", 1);
  if (size <= 0) return Status::invalid("LRN: size must be positive, got " + std::to_string(size));
  if (x.rank() < 2) return Status::invalid("LRN input " + x.describe() + " needs rank >= 2");
  if (!is_floating(x.dtype())) return Status::unsupported("LRN: unsupported dtype " + x.describe());
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor and ceil of (size-1)/2
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));
  const AxisSplit s = split_at_axis(x.dims(), 1);  // [N, C, spatial]
  const std::vector<double> xv = x.to_double_vector();
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y->data<T>();
    for (int64_t b = 0; b < s.outer; ++b)
      for (int64_t c = 0; c < s.n; ++c)
        for (int64_t i = 0; i < s.inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(s.n - 1, c + after); ++k)
            sq += xv[s.at(b, k, i)] * xv[s.at(b, k, i)];
          const int64_t e = s.at(b, c, i);
          py[e] = from_double<T>(xv[e] / std::pow(bias + alpha / size * sq, beta));
        }
  });
  return Status();
}

}  // namespace

void register_lrn(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "LRN",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = lrn_kernel,
  });
}

}  // namespace ferry::ops
