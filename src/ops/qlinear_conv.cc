// QLinearConv: y = saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale / y_scale) + y_zp).
// w_scale and w_zero_point are per tensor or per output channel; B is int32. The integer convolution is
// exact (int64); the rescale is done in double and rounds half to even.
#include "ops/util/nn_conv.h"

namespace ferry::ops {

namespace {
Status qlinear_conv_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "x"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* xs, nn::tensor_in(ctx, 1, "x_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* xzp, nn::optional_tensor_in(ctx, 2, "x_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* w, nn::tensor_in(ctx, 3, "w"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ws, nn::tensor_in(ctx, 4, "w_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* wzp, nn::optional_tensor_in(ctx, 5, "w_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ys, nn::tensor_in(ctx, 6, "y_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* yzp, nn::optional_tensor_in(ctx, 7, "y_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::optional_tensor_in(ctx, 8, "B"));
  if (!nn::is_quant_int8(x->dtype())) return nn::bad_dtype(ctx, *x, "x");
  if (!nn::is_quant_int8(w->dtype())) return nn::bad_dtype(ctx, *w, "w");
  for (const Tensor* s : {xs, ws, ys})
    if (!is_floating(s->dtype())) return nn::bad_dtype(ctx, *s, "scale");
  if (b && b->dtype() != DType::kInt32) return nn::bad_dtype(ctx, *b, "B");
  const DType out_type = yzp ? yzp->dtype() : x->dtype();
  if (!nn::is_quant_int8(out_type)) return Status::invalid("QLinearConv: y_zero_point must be int8 or uint8");
  FERRY_ASSIGN_OR_RETURN(nn::ConvSetup s, nn::conv_setup(ctx.node(), *x, *w));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> xz, nn::per_channel_param(ctx, xzp, 1, 0.0, "x_zero_point"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> xsv, nn::per_channel_param(ctx, xs, 1, 1.0, "x_scale"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> wz, nn::per_channel_param(ctx, wzp, s.M, 0.0, "w_zero_point"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> wsv, nn::per_channel_param(ctx, ws, s.M, 1.0, "w_scale"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> ysv, nn::per_channel_param(ctx, ys, 1, 1.0, "y_scale"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> yz, nn::per_channel_param(ctx, yzp, 1, 0.0, "y_zero_point"));
  if (b && !(b->rank() == 1 && b->numel() == s.M))
    return Status::invalid("QLinearConv: B must be a 1-D tensor of " + std::to_string(s.M) + " values");
  std::vector<int64_t> xv = nn::to_int64s(*x), wv = nn::to_int64s(*w);
  for (int64_t& v : xv) v -= static_cast<int64_t>(xz[0]);
  const int64_t per_m = s.M ? w->numel() / s.M : 0;
  for (int64_t i = 0; i < w->numel(); ++i) wv[i] -= static_cast<int64_t>(wz[i / per_m]);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, out_type, s.out_dims));
  const int64_t out_plane = (s.N * s.M) != 0 ? y->numel() / (s.N * s.M) : 0;
  std::vector<int64_t> acc(y->numel(), 0);
  if (b) {
    std::vector<int64_t> bias = nn::to_int64s(*b);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t m = 0; m < s.M; ++m) std::fill_n(acc.begin() + (n * s.M + m) * out_plane, out_plane, bias[m]);
  }
  nn::conv_direct<int64_t>(xv.data(), wv.data(), acc.data(), s.N, s.C, s.M, s.group, s.win);
  for (int64_t i = 0; i < y->numel(); ++i) {
    const int64_t m = out_plane ? (i / out_plane) % s.M : 0;
    const double scale = nn::round_to_dtype(nn::round_to_dtype(xsv[0] * wsv[m], xs->dtype()) / ysv[0], xs->dtype());
    acc[i] = nn::saturate_round(static_cast<double>(acc[i]) * scale + yz[0], out_type);
  }
  nn::store_int64s(*y, acc.data());
  return Status();
}
}  // namespace

void register_qlinear_conv(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "QLinearConv",
      .since_version = 10,
      .min_inputs = 8,
      .max_inputs = 9,
      .infer =
          [](InferContext& ctx) {
            DType t = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
            return nn::infer_conv(ctx, t, 0, 3);
          },
      .kernel = qlinear_conv_kernel,
  });
}

}  // namespace ferry::ops
