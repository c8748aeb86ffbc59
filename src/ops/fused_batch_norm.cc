// com.ferry FusedBatchNorm (produced by passes/fuse_batch_norm_post_ops): an inference
// BatchNormalization whose statistics are folded into one scale and shift per channel, applied to the
// concatenation of its inputs along `axis` (one input: no concatenation), then the activation chain:
//   Y = post_ops(Concat(X0, X1, ..., axis) * bn_scale[c] + bn_shift[c]),  c = the index on dim 1,
// where bn_scale = scale / sqrt(var + epsilon) and bn_shift = B - mean * bn_scale (floats, one per
// channel of Y). DenseNet's pre-activation layers (Concat -> BatchNormalization -> Relu -> Conv) become
// one pass over memory instead of three. The reference kernel concatenates as Concat does, then applies
// the affine map and the post-ops in double.
#include "ops/util/nn_common.h"
#include "ops/util/post_ops.h"
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {

Status check_channels(const std::vector<float>& scale, const std::vector<float>& shift, int64_t channels) {
  if (static_cast<int64_t>(scale.size()) != channels || static_cast<int64_t>(shift.size()) != channels)
    return Status::invalid("FusedBatchNorm: bn_scale and bn_shift must hold one value per channel (" +
                           std::to_string(channels) + "), got " + std::to_string(scale.size()) + " and " +
                           std::to_string(shift.size()));
  return Status();
}

Status fused_batch_norm_kernel(KernelContext& ctx) {
  std::vector<const Tensor*> xs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, i, "X"));
    if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
    xs.push_back(x);
  }
  if (xs.empty()) return Status::invalid("FusedBatchNorm needs at least one input");
  FERRY_ASSIGN_OR_RETURN(std::vector<PostOp> post, read_post_ops(ctx.node()));
  if (has_sum(post)) return Status::invalid("FusedBatchNorm: the post-op 'sum' has no residual input here");
  if (!ctx.node().has_attr("axis")) return Status::invalid("FusedBatchNorm needs the 'axis' attribute");
  const int64_t axis = ctx.node().attr_int("axis", 0);
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, tensor_ops::concat_dims(xs, axis));
  if (dims.size() < 2) return Status::invalid("FusedBatchNorm: Y must have a channel dim (rank 2 or more)");
  const std::vector<float> scale = ctx.node().attr_floats("bn_scale"), shift = ctx.node().attr_floats("bn_shift");
  FERRY_RETURN_IF_ERROR(check_channels(scale, shift, dims[1]));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, xs[0]->dtype(), dims));
  tensor_ops::concat_copy(xs, axis, *y);
  std::vector<double> v = nn::to_doubles(*y);
  int64_t inner = 1;
  for (size_t d = 2; d < dims.size(); ++d) inner *= dims[d];
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    const int64_t c = (i / inner) % dims[1];
    v[i] = v[i] * scale[c] + shift[c];
  }
  apply_post_ops(post, v.data(), static_cast<int64_t>(v.size()), nullptr);
  nn::store_doubles(*y, v.data());
  return Status();
}

Status infer_fused_batch_norm(InferContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(std::vector<PostOp> post, read_post_ops(ctx.node()));
  if (has_sum(post)) return Status::invalid("FusedBatchNorm: the post-op 'sum' has no residual input here");
  if (!ctx.node().has_attr("axis")) return Status::invalid("FusedBatchNorm needs the 'axis' attribute");
  FERRY_RETURN_IF_ERROR(tensor_ops::infer_concat(ctx));
  const ir::Value* y = ctx.node().outputs[0];
  if (y && y->shape && y->shape->size() >= 2 && (*y->shape)[1].is_static())
    FERRY_RETURN_IF_ERROR(check_channels(ctx.node().attr_floats("bn_scale"), ctx.node().attr_floats("bn_shift"),
                                         (*y->shape)[1].value));
  return Status();
}

}  // namespace

void register_fused_batch_norm(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "FusedBatchNorm",
      .domain = "com.ferry",
      .since_version = 1,
      .min_inputs = 1,
      .infer = infer_fused_batch_norm,
      .kernel = fused_batch_norm_kernel,
  });
}

}  // namespace ferry::ops
