// InstanceNormalization: X [N, C, D1, ...]; each (sample, channel) is normalized over its spatial
// elements with its mean and population variance: y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c].
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Status instance_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1) || !ctx.has_input(2)) return Status::invalid("InstanceNormalization needs scale and B");
  if (x.rank() < 2) return Status::invalid("InstanceNormalization input " + x.describe() + " needs rank >= 2");
  const int64_t n = x.dim(0), c = x.dim(1);
  int64_t spatial = 1;
  for (int d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
  const std::vector<double> scale = ctx.input(1).to_double_vector(), bias = ctx.input(2).to_double_vector();
  if (static_cast<int64_t>(scale.size()) != c || static_cast<int64_t>(bias.size()) != c)
    return Status::invalid("InstanceNormalization: scale " + ctx.input(1).describe() + " and B " +
                           ctx.input(2).describe() + " need " + std::to_string(c) + " elements");
  if (!is_floating(x.dtype()))
    return Status::unsupported("InstanceNormalization: unsupported dtype " + x.describe());
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));
  const std::vector<double> xv = x.to_double_vector();
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y->data<T>();
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t base = (b * c + ch) * spatial;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < spatial; ++k) mean += xv[base + k];
        mean = spatial ? mean / spatial : 0.0;
        for (int64_t k = 0; k < spatial; ++k) var += (xv[base + k] - mean) * (xv[base + k] - mean);
        var = spatial ? var / spatial : 0.0;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t k = 0; k < spatial; ++k)
          py[base + k] = from_double<T>(scale[ch] * (xv[base + k] - mean) * inv + bias[ch]);
      }
    }
  });
  return Status();
}

}  // namespace

void register_instance_normalization(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "InstanceNormalization",
      .since_version = 1,
      .min_inputs = 3,
      .max_inputs = 3,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = instance_norm_kernel,
  });
}

}  // namespace ferry::ops
