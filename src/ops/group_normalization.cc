// GroupNormalization (opset 18, 21): X [N, C, D1, ...] split into num_groups groups of C/num_groups
// channels; each (sample, group) is normalized by its own mean and population variance, then
// y = scale * x_hat + bias. Opset 18 has one scale/bias per group, opset 21 one per channel; a model whose
// scale length matches the other convention is accepted too (exporters disagree about opset 18).
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Status group_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1) || !ctx.has_input(2)) return Status::invalid("GroupNormalization needs scale and bias");
  if (x.rank() < 2) return Status::invalid("GroupNormalization input " + x.describe() + " needs rank >= 2");
  if (!ctx.node().has_attr("num_groups")) return Status::invalid("GroupNormalization needs attribute num_groups");
  const int64_t groups = ctx.node().attr_int("num_groups", 1);
  const int64_t n = x.dim(0), c = x.dim(1);
  if (groups <= 0 || c % groups != 0)
    return Status::invalid("GroupNormalization: num_groups " + std::to_string(groups) +
                           " does not divide the channel count " + std::to_string(c));
  int64_t spatial = 1;
  for (int d = 2; d < x.rank(); ++d) spatial *= x.dim(d);
  const int64_t per_group = c / groups;

  std::vector<double> scale = ctx.input(1).to_double_vector(), bias = ctx.input(2).to_double_vector();
  const int64_t wanted = ctx.opset() >= 21 ? c : groups;
  for (const auto* v : {&scale, &bias}) {
    const int64_t len = static_cast<int64_t>(v->size());
    if (len != wanted && len != c && len != groups)
      return Status::invalid("GroupNormalization: scale and bias need " + std::to_string(wanted) +
                             " elements, got " + std::to_string(len));
  }
  // Index of a channel's parameter under each parameter vector's own convention.
  auto param = [&](const std::vector<double>& v, int64_t ch) {
    const int64_t len = static_cast<int64_t>(v.size());
    const bool per_channel = len == c && (len != groups || wanted == c);
    return v[per_channel ? ch : ch / per_group];
  };
  if (!is_floating(x.dtype())) return Status::unsupported("GroupNormalization: unsupported dtype " + x.describe());
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));
  const std::vector<double> xv = x.to_double_vector();
  const int64_t block = per_group * spatial;  // elements of one (sample, group)
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y->data<T>();
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t base = (b * groups + g) * block;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < block; ++k) mean += xv[base + k];
        mean = block ? mean / block : 0.0;
        for (int64_t k = 0; k < block; ++k) var += (xv[base + k] - mean) * (xv[base + k] - mean);
        var = block ? var / block : 0.0;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t k = 0; k < block; ++k) {
          const int64_t ch = g * per_group + k / spatial;
          py[base + k] = from_double<T>(param(scale, ch) * (xv[base + k] - mean) * inv + param(bias, ch));
        }
      }
    }
  });
  return Status();
}

}  // namespace

void register_group_normalization(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "GroupNormalization",
      .since_version = 18,
      .min_inputs = 3,
      .max_inputs = 3,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = group_norm_kernel,
  });
}

}  // namespace ferry::ops
