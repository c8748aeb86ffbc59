// BatchNormalization over X [N, C, D1, ...] with per-channel scale, bias, mean and var.
// Inference: y = scale * (x - mean) / sqrt(var + epsilon) + bias.
// Training (opset >= 14: training_mode=1; earlier opsets: when the optional statistics outputs are
// requested) normalizes with the batch statistics and returns the running statistics updated as
// running * momentum + batch * (1 - momentum) (opset >= 14: outputs running_mean, running_var; earlier:
// mean, var, saved_mean, saved_var). The variance is the population variance, as in the reference.
// Opset 7's spatial=0 takes per-activation parameters of shape [C, D1, ...].
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

bool is_training(const KernelContext& ctx) {
  if (ctx.opset() >= 14) return ctx.node().attr_int("training_mode", 0) != 0;
  for (int i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.wants_output(i)) return true;
  return false;
}

Status write_stat(KernelContext& ctx, int out, DType dtype, const std::vector<double>& v) {
  if (!ctx.wants_output(out)) return Status();
  FERRY_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(out, dtype, {static_cast<int64_t>(v.size())}));
  bool handled = dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < v.size(); ++i) t->data<T>()[i] = from_double<T>(v[i]);
  });
  return handled ? Status() : Status::unsupported("BatchNormalization: statistics must be floating point");
}

Status batch_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return Status::invalid("BatchNormalization input " + x.describe() + " needs rank >= 2");
  for (int i = 1; i <= 4; ++i)
    if (!ctx.has_input(i)) return Status::invalid("BatchNormalization needs 5 inputs");
  const int64_t n = x.dim(0), c = x.dim(1);
  int64_t inner = 1;
  for (int d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  const bool per_activation = ctx.opset() < 9 && ctx.node().attr_int("spatial", 1) == 0;
  const int64_t params = per_activation ? c * inner : c;
  const char* names[] = {"", "scale", "B", "mean", "var"};
  std::vector<double> p[5];
  for (int i = 1; i <= 4; ++i) {
    if (ctx.input(i).numel() != params)
      return Status::invalid(std::string("BatchNormalization ") + names[i] + " " + ctx.input(i).describe() +
                             " must have " + std::to_string(params) + " elements for input " + x.describe());
    p[i] = ctx.input(i).to_double_vector();
  }
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const double momentum = ctx.node().attr_float("momentum", 0.9f);
  const bool training = is_training(ctx);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));

  // Statistics used to normalize: the given ones, or the batch's when training.
  std::vector<double> mean = p[3], var = p[4];
  if (training) {
    const std::vector<double> xv = x.to_double_vector();
    std::vector<double> sum(params, 0.0), sq(params, 0.0);
    const int64_t per_param = per_activation ? n : n * inner;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = per_activation ? ch * inner + i : ch;
          sum[k] += xv[(b * c + ch) * inner + i];
        }
    for (int64_t k = 0; k < params; ++k) mean[k] = per_param ? sum[k] / per_param : 0.0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = per_activation ? ch * inner + i : ch;
          const double d = xv[(b * c + ch) * inner + i] - mean[k];
          sq[k] += d * d;
        }
    for (int64_t k = 0; k < params; ++k) var[k] = per_param ? sq[k] / per_param : 0.0;
  }

  bool handled = dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y->data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = per_activation ? ch * inner + i : ch;
          const int64_t e = (b * c + ch) * inner + i;
          py[e] = from_double<T>(p[1][k] * (to_double(px[e]) - mean[k]) / std::sqrt(var[k] + eps) + p[2][k]);
        }
  });
  if (!handled) return Status::unsupported("BatchNormalization: unsupported dtype " + x.describe());
  if (!training) return Status();

  std::vector<double> run_mean(params), run_var(params);
  for (int64_t k = 0; k < params; ++k) {
    run_mean[k] = p[3][k] * momentum + mean[k] * (1 - momentum);
    run_var[k] = p[4][k] * momentum + var[k] * (1 - momentum);
  }
  const DType stat_type = ctx.input(3).dtype();
  FERRY_RETURN_IF_ERROR(write_stat(ctx, 1, stat_type, run_mean));
  FERRY_RETURN_IF_ERROR(write_stat(ctx, 2, stat_type, run_var));
  if (ctx.opset() < 14) {
    FERRY_RETURN_IF_ERROR(write_stat(ctx, 3, stat_type, mean));
    FERRY_RETURN_IF_ERROR(write_stat(ctx, 4, stat_type, var));
  }
  return Status();
}

Status batch_norm_infer(InferContext& ctx) {
  FERRY_RETURN_IF_ERROR(infer_same_as_input(ctx));
  // The statistics outputs are per-channel vectors of the mean input's type.
  const std::optional<Shape>* s = ctx.input_shape(3);
  for (int i = 1; i < ctx.node().num_outputs(); ++i) ctx.set_output(i, ctx.input_dtype(3), s ? *s : std::nullopt);
  return Status();
}

}  // namespace

void register_batch_normalization(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "BatchNormalization",
      .since_version = 1,
      .min_inputs = 5,
      .max_inputs = 5,
      .infer = batch_norm_infer,
      .kernel = batch_norm_kernel,
  });
}

}  // namespace ferry::ops
