// com.ferry FusedConv (produced by passes/fuse_conv_post_ops): Y = post_ops(conv(X, W) + B), inputs
// X, W, B?, Z? (Z: the residual for the `sum` post-op, same shape as Y). Every Conv attribute plus
// post_ops/post_op_alpha/post_op_beta (ops/util/post_ops.h). The reference kernel is Conv's loop.
#include "ops/util/nn_conv.h"
#include "ops/util/post_ops.h"

namespace ferry::ops {

namespace {
Status fused_conv_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* w, nn::tensor_in(ctx, 1, "W"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::optional_tensor_in(ctx, 2, "B"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* z, nn::optional_tensor_in(ctx, 3, "Z"));
  FERRY_ASSIGN_OR_RETURN(std::vector<PostOp> post, read_post_ops(ctx.node()));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype()) || (z && z->dtype() != x->dtype()))
    return Status::invalid("FusedConv: X, W, B and Z must have the same type");
  if (has_sum(post) && !z) return Status::invalid("FusedConv: post-op 'sum' needs the residual input Z");
  FERRY_ASSIGN_OR_RETURN(nn::ConvSetup s, nn::conv_setup(ctx.node(), *x, *w));
  if (z && z->dims() != s.out_dims)
    return Status::invalid("FusedConv: Z " + z->describe() + " must have the output's shape " + dims_to_string(s.out_dims));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> acc, nn::conv_float_reference("FusedConv", s, *x, *w, b));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), s.out_dims));
  std::vector<double> zv = z ? nn::to_doubles(*z) : std::vector<double>();
  apply_post_ops(post, acc.data(), static_cast<int64_t>(acc.size()), z ? zv.data() : nullptr);
  nn::store_doubles(*y, acc.data());
  return Status();
}
}  // namespace

void register_fused_conv(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "FusedConv",
      .domain = "com.ferry",
      .since_version = 1,
      .min_inputs = 2,
      .max_inputs = 4,
      .infer =
          [](InferContext& ctx) {
            auto post = read_post_ops(ctx.node());
            if (!post.ok()) return post.status();
            return nn::infer_conv(ctx, ctx.input_dtype(0), 0, 1);
          },
      .kernel = fused_conv_kernel,
  });
}

}  // namespace ferry::ops
