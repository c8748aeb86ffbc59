// MeanVarianceNormalization: y = (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9), the statistics taken
// over `axes` (default [0, 2, 3]) — the formula of the ONNX function body, epsilon added after the sqrt.
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Status mvn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> axes = ctx.node().attr_ints("axes", {0, 2, 3});
  FERRY_ASSIGN_OR_RETURN(std::vector<bool> mask, axes_to_mask(axes, x.rank()));
  if (!is_floating(x.dtype()))
    return Status::unsupported("MeanVarianceNormalization: unsupported dtype " + x.describe());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));
  FERRY_ASSIGN_OR_RETURN(int64_t groups, checked_numel(reduced_dims(x.dims(), mask, true)));
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d)
    if (mask[d]) count *= x.dim(d);
  const std::vector<double> xv = x.to_double_vector();
  std::vector<double> sum(groups, 0.0), sq(groups, 0.0);
  for_each_reduce(x.dims(), mask, [&](int64_t i, int64_t o) {
    sum[o] += xv[i];
    sq[o] += xv[i] * xv[i];
  });
  for (int64_t o = 0; o < groups; ++o) {
    sum[o] /= count;  // now the mean
    sq[o] = std::sqrt(sq[o] / count - sum[o] * sum[o]) + 1e-9;  // now the denominator
  }
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y->data<T>();
    for_each_reduce(x.dims(), mask, [&](int64_t i, int64_t o) { py[i] = from_double<T>((xv[i] - sum[o]) / sq[o]); });
  });
  return Status();
}

}  // namespace

void register_mean_variance_normalization(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "MeanVarianceNormalization",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = mvn_kernel,
  });
}

}  // namespace ferry::ops
