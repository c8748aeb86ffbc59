// com.ferry RoundFloat (inserted by passes/precision): Y = X rounded to the nearest value of a lower
// float type and held as float32 again, attribute `to` = 10 (FLOAT16) or 16 (BFLOAT16), ONNX's
// TensorProto codes as Cast uses them. This is how ferry emulates a device that stores tensors in
// fp16/bf16 and computes in fp32: round to nearest even, NaN stays NaN, and a value beyond the type's
// range becomes +-Inf (fp16: |x| >= 65520), which is exactly the overflow a real fp16 device shows.
#include "ops/op.h"
#include "ops/util/nn_common.h"
#include "ops/util/round_float.h"

namespace ferry::ops {

namespace {

Status round_float_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  if (x->dtype() != DType::kFloat32) return nn::bad_dtype(ctx, *x, "X");
  const int64_t to = ctx.node().attr_int("to", 10);
  if (to != 10 && to != 16)
    return Status::invalid("RoundFloat: attribute 'to' must be 10 (float16) or 16 (bfloat16), got " + std::to_string(to));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, x->dims()));
  round_float_array(to == 10 ? DType::kFloat16 : DType::kBFloat16, x->data<float>(), y->data<float>(), x->numel());
  return Status();
}

}  // namespace

void register_round_float(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "RoundFloat",
      .domain = "com.ferry",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer =
          [](InferContext& ctx) {
            ctx.set_output(0, DType::kFloat32, *ctx.input_shape(0));
            return Status();
          },
      .kernel = round_float_kernel,
  });
}

}  // namespace ferry::ops
