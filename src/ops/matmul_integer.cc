// MatMulInteger: int32 Y = (A - a_zero_point) @ (B - b_zero_point) for 8-bit A and B, numpy matmul shape
// rules. a_zero_point is per tensor or per row of A (M values), b_zero_point per tensor or per column (N).
#include "ops/util/nn_matmul.h"

namespace ferry::ops {

namespace {
Status matmul_integer_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, nn::tensor_in(ctx, 0, "A"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::tensor_in(ctx, 1, "B"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* azp, nn::optional_tensor_in(ctx, 2, "a_zero_point"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* bzp, nn::optional_tensor_in(ctx, 3, "b_zero_point"));
  if (!nn::is_quant_int8(a->dtype())) return nn::bad_dtype(ctx, *a, "A");
  if (!nn::is_quant_int8(b->dtype())) return nn::bad_dtype(ctx, *b, "B");
  if ((azp && azp->dtype() != a->dtype()) || (bzp && bzp->dtype() != b->dtype()))
    return Status::invalid("MatMulInteger: zero points must have the type of their operand");
  FERRY_ASSIGN_OR_RETURN(nn::MatMulPlan p, nn::plan_matmul(a->dims(), b->dims(), "MatMulInteger"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> az, nn::per_channel_param(ctx, azp, p.M, 0.0, "a_zero_point"));
  FERRY_ASSIGN_OR_RETURN(std::vector<double> bz, nn::per_channel_param(ctx, bzp, p.N, 0.0, "b_zero_point"));
  std::vector<int64_t> av = nn::to_int64s(*a), bv = nn::to_int64s(*b);
  for (size_t i = 0; i < av.size(); ++i) av[i] -= static_cast<int64_t>(az[(i / p.K) % p.M]);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] -= static_cast<int64_t>(bz[i % p.N]);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::kInt32, p.out_dims));
  std::vector<int64_t> yv(y->numel());
  nn::matmul_core<int64_t>(av.data(), bv.data(), yv.data(), p);
  nn::store_int64s(*y, yv.data());
  return Status();
}
}  // namespace

void register_matmul_integer(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "MatMulInteger",
      .since_version = 10,
      .min_inputs = 2,
      .max_inputs = 4,
      .infer =
          [](InferContext& ctx) {
            ctx.set_output(0, DType::kInt32, nn::infer_matmul_shape(ctx.input_shape(0), ctx.input_shape(1)));
            return Status();
          },
      .kernel = matmul_integer_kernel,
  });
}

}  // namespace ferry::ops
