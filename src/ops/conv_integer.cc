// ConvInteger: int32 Y = conv(X - x_zero_point, W - w_zero_point) for 8-bit X and W. x_zero_point is per
// tensor, w_zero_point per tensor or per output channel. Padding is x_zero_point (zero after the shift).
#include "ops/util/nn_conv.h"

namespace ferry::ops {

namespace {
Status conv_integer_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "x"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* w, nn::tensor_in(ctx, 1, "w"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* xzp, nn::optional_tensor_in(ctx, 2, "x_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* wzp, nn::optional_tensor_in(ctx, 3, "w_zero_point"));
  if (!nn::is_quant_int8(x->dtype())) return nn::bad_dtype(ctx, *x, "x");
  if (!nn::is_quant_int8(w->dtype())) return nn::bad_dtype(ctx, *w, "w");
  FERRY_ASSIGN_OR_RETURN(nn::ConvSetup s, nn::conv_setup(ctx.node(), *x, *w));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> xz, nn::per_channel_param(ctx, xzp, 1, 0.0, "x_zero_point"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> wz, nn::per_channel_param(ctx, wzp, s.M, 0.0, "w_zero_point"));
  std::vector<int64_t> xv = nn::to_int64s(*x), wv = nn::to_int64s(*w);
  for (int64_t& v : xv) v -= static_cast<int64_t>(xz[0]);
  const int64_t per_m = s.M ? w->numel() / s.M : 0;
  for (int64_t i = 0; i < w->numel(); ++i) wv[i] -= static_cast<int64_t>(wz[i / per_m]);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::kInt32, s.out_dims));
  std::vector<int64_t> acc(y->numel(), 0);
  nn::conv_direct<int64_t>(xv.data(), wv.data(), acc.data(), s.N, s.C, s.M, s.group, s.win);
  nn::store_int64s(*y, acc.data());
  return Status();
}
}  // namespace

void register_conv_integer(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "ConvInteger",
      .since_version = 10,
      .min_inputs = 2,
      .max_inputs = 4,
      .infer = [](InferContext& ctx) { return nn::infer_conv(ctx, DType::kInt32, 0, 1); },
      .kernel = conv_integer_kernel,
  });
}

}  // namespace ferry::ops
