// MatMul: numpy matmul (batched, broadcast batch dims, 1-D operands). Floats accumulate in double;
// integers multiply and add with wrap-around in 64 bits, then truncate to the element type.
#include "ops/util/nn_matmul.h"

namespace ferry::ops {

namespace {
Status matmul_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, nn::tensor_in(ctx, 0, "A"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::tensor_in(ctx, 1, "B"));
  if (a->dtype() != b->dtype()) return Status::invalid("MatMul: A and B must have the same type");
  if (a->dtype() == DType::kBool || a->dtype() == DType::kUndefined) return nn::bad_dtype(ctx, *a, "A");
  FERRY_ASSIGN_OR_RETURN(nn::MatMulPlan p, nn::plan_matmul(a->dims(), b->dims(), "MatMul"));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, a->dtype(), p.out_dims));
  if (is_floating(a->dtype())) {
    std::vector<double> av = nn::to_doubles(*a), bv = nn::to_doubles(*b), yv(y->numel());
    nn::matmul_core<double>(av.data(), bv.data(), yv.data(), p);
    nn::store_doubles(*y, yv.data());
  } else {
    std::vector<int64_t> ai = nn::to_int64s(*a), bi = nn::to_int64s(*b);
    std::vector<uint64_t> au(ai.begin(), ai.end()), bu(bi.begin(), bi.end()), yu(y->numel());
    nn::matmul_core<uint64_t>(au.data(), bu.data(), yu.data(), p);
    std::vector<int64_t> yi(yu.begin(), yu.end());
    nn::store_int64s(*y, yi.data());
  }
  return Status();
}
}  // namespace

void register_matmul(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "MatMul",
      .since_version = 1,
      .min_inputs = 2,
      .max_inputs = 2,
      .infer =
          [](InferContext& ctx) {
            ctx.set_output(0, ctx.input_dtype(0), nn::infer_matmul_shape(ctx.input_shape(0), ctx.input_shape(1)));
            return Status();
          },
      .kernel = matmul_kernel,
  });
}

}  // namespace ferry::ops
