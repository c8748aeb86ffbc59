// QLinearMatMul: Y = saturate(round((A - a_zp) @ (B - b_zp) * a_scale * b_scale / y_scale) + y_zp).
// Scales and zero points are per tensor, or per row of A / per column of B and Y. The integer product
// is exact (int64); the rescale is done in double, rounding half to even as numpy's rint.
#include <cmath>

#include "ops/util/nn_matmul.h"

namespace ferry::ops {

namespace {
Status qlinear_matmul_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, nn::tensor_in(ctx, 0, "a"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* as, nn::tensor_in(ctx, 1, "a_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* azp, nn::optional_tensor_in(ctx, 2, "a_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::tensor_in(ctx, 3, "b"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* bs, nn::tensor_in(ctx, 4, "b_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* bzp, nn::optional_tensor_in(ctx, 5, "b_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ys, nn::tensor_in(ctx, 6, "y_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* yzp, nn::optional_tensor_in(ctx, 7, "y_zero_point"));
  if (!nn::is_quant_int8(a->dtype())) return nn::bad_dtype(ctx, *a, "a");
  if (!nn::is_quant_int8(b->dtype())) return nn::bad_dtype(ctx, *b, "b");
  for (const Tensor* s : {as, bs, ys})
    if (!is_floating(s->dtype())) return nn::bad_dtype(ctx, *s, "scale");
  const DType out_type = yzp ? yzp->dtype() : a->dtype();
  if (!nn::is_quant_int8(out_type)) return Status::invalid("QLinearMatMul: y_zero_point must be int8 or uint8");
  FERRY_ASSIGN_OR_RETURN(nn::MatMulPlan p, nn::plan_matmul(a->dims(), b->dims(), "QLinearMatMul"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> az, nn::per_channel_param(ctx, azp, p.M, 0.0, "a_zero_point"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> bz, nn::per_channel_param(ctx, bzp, p.N, 0.0, "b_zero_point"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> asv, nn::per_channel_param(ctx, as, p.M, 1.0, "a_scale"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> bsv, nn::per_channel_param(ctx, bs, p.N, 1.0, "b_scale"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> ysv, nn::per_channel_param(ctx, ys, p.N, 1.0, "y_scale"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> yz, nn::per_channel_param(ctx, yzp, p.N, 0.0, "y_zero_point"));
  std::vector<int64_t> av = nn::to_int64s(*a), bv = nn::to_int64s(*b);
  for (size_t i = 0; i < av.size(); ++i) av[i] -= static_cast<int64_t>(az[(i / p.K) % p.M]);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] -= static_cast<int64_t>(bz[i % p.N]);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, out_type, p.out_dims));
  std::vector<int64_t> acc(y->numel());
  nn::matmul_core<int64_t>(av.data(), bv.data(), acc.data(), p);
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t col = static_cast<int64_t>(i) % p.N, row = (static_cast<int64_t>(i) / p.N) % p.M;
    // The reference combines the scales in their own type (float32 or float16), then rescales in double.
    const DType st = as->dtype();
    const double scale = nn::round_to_dtype(nn::round_to_dtype(asv[row] * bsv[col], st) / ysv[col], st);
    acc[i] = nn::saturate_round(static_cast<double>(acc[i]) * scale + yz[col], out_type);
  }
  nn::store_int64s(*y, acc.data());
  return Status();
}
}  // namespace

void register_qlinear_matmul(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "QLinearMatMul",
      .since_version = 10,
      .min_inputs = 8,
      .max_inputs = 8,
      .infer =
          [](InferContext& ctx) {
            DType t = ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0);
            ctx.set_output(0, t, nn::infer_matmul_shape(ctx.input_shape(0), ctx.input_shape(3)));
            return Status();
          },
      .kernel = qlinear_matmul_kernel,
  });
}

}  // namespace ferry::ops
