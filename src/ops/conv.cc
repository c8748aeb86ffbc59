// Conv: N-D convolution (1-3 spatial dims in the reference kernel) with groups, strides, dilations,
// explicit pads or auto_pad, optional bias. kernel_shape is taken from W (an explicit attribute must
// agree). Floating types only; accumulates in double.
#include "ops/util/nn_conv.h"

namespace ferry::ops {

namespace {
Status conv_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* w, nn::tensor_in(ctx, 1, "W"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::optional_tensor_in(ctx, 2, "B"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype()))
    return Status::invalid("Conv: X, W and B must have the same type");
  FERRY_ASSIGN_OR_RETURN(nn::ConvSetup s, nn::conv_setup(ctx.node(), *x, *w));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> acc, nn::conv_float_reference("Conv", s, *x, *w, b));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), s.out_dims));
  nn::store_doubles(*y, acc.data());
  return Status();
}
}  // namespace

void register_conv(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Conv",
      .since_version = 1,
      .min_inputs = 2,
      .max_inputs = 3,
      .infer = [](InferContext& ctx) { return nn::infer_conv(ctx, ctx.input_dtype(0), 0, 1); },
      .kernel = conv_kernel,
  });
}

}  // namespace ferry::ops
