// Optional, OptionalHasElement, OptionalGetElement (opset 15+; opset 18 lets the latter two take plain
// tensors and sequences too). An optional holding a value is that value's RtValue; an empty one is
// RtValue::none().
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status optional_kernel(KernelContext& ctx) {
  if (ctx.has_input(0)) {
    ctx.set_output_value(0, *ctx.input_value(0));
  } else {
    ctx.set_output_value(0, RtValue::none());
  }
  return Status();
}

Status has_element_kernel(KernelContext& ctx) {
  ctx.set_output(0, Tensor::scalar<bool>(ctx.has_input(0)));
  return Status();
}

Status get_element_kernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return Status::invalid("OptionalGetElement: the optional input is empty");
  ctx.set_output_value(0, *ctx.input_value(0));
  return Status();
}

}  // namespace

void register_optional(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Optional", .since_version = 15, .min_inputs = 0, .max_inputs = 1,
                 .infer = [](InferContext& ctx) {
                   ctx.set_output_kind(0, ir::ValueKind::kOptional);
                   ctx.set_output_dtype(0, ctx.input_dtype(0));
                   return Status();
                 },
                 .kernel = optional_kernel});
  r.add(OpSchema{.op_type = "OptionalHasElement", .since_version = 15, .min_inputs = 0, .max_inputs = 1,
                 .infer = [](InferContext& ctx) {
                   ctx.set_output(0, DType::kBool, Shape{});
                   return Status();
                 },
                 .kernel = has_element_kernel});
  r.add(OpSchema{.op_type = "OptionalGetElement", .since_version = 15, .min_inputs = 1, .max_inputs = 1,
                 .infer = [](InferContext& ctx) {
                   const ir::Value* in = ctx.input(0);
                   if (!in) return Status();
                   // An optional's element kind is not kept in the IR; keep what the model declared.
                   if (in->kind != ir::ValueKind::kOptional) ctx.set_output_kind(0, in->kind);
                   ctx.set_output_dtype(0, in->dtype);
                   if (in->kind == ir::ValueKind::kTensor && in->shape) ctx.set_output(0, in->dtype, in->shape);
                   return Status();
                 },
                 .kernel = get_element_kernel});
}

}  // namespace ferry::ops
