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
  if (b && !(b->rank() == 1 && b->numel() == s.M))
    return Status::invalid("Conv: B must be a 1-D tensor of " + std::to_string(s.M) + " values, got " + b->describe());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), s.out_dims));
  const int64_t out_plane = s.M ? y->numel() / std::max<int64_t>(1, s.N * s.M) : 0;
  std::vector<double> acc(y->numel(), 0.0);
  if (b) {
    std::vector<double> bias = nn::to_doubles(*b);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t m = 0; m < s.M; ++m) std::fill_n(acc.begin() + (n * s.M + m) * out_plane, out_plane, bias[m]);
  }
  std::vector<double> xv = nn::to_doubles(*x), wv = nn::to_doubles(*w);
  nn::conv_direct<double>(xv.data(), wv.data(), acc.data(), s.N, s.C, s.M, s.group, s.win);
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
