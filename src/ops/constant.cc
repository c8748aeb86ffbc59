// Constant (value / value_float(s) / value_int(s); string values are not supported) and ConstantOfShape
// (a tensor of a given shape filled with one value, float32 0 by default).
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Status constant_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(Tensor t, constant_node_value(ctx.node()));
  ctx.set_output(0, std::move(t));
  return Status();
}

Status constant_infer(InferContext& ctx) {
  auto t = constant_node_value(ctx.node());
  if (!t.ok()) return t.status();
  ctx.set_output(0, t->dtype(), to_shape(t->dims()));
  return Status();
}

Result<Tensor> fill_value(const ir::Node& n) {
  if (const Tensor* v = n.attr_tensor("value")) {
    if (v->numel() != 1) return Status::invalid("ConstantOfShape value must hold one element, got " + v->describe());
    return *v;
  }
  if (n.has_attr("value")) return Status::invalid("ConstantOfShape value must be a tensor");
  return Tensor::scalar<float>(0.f);
}

Status constant_of_shape_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* s, tensor_input(ctx, 0, "input"));
  if (s->rank() != 1) return Status::invalid("shape input must be 1-D, got " + s->describe());
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, int_values(*s, "input"));
  FERRY_ASSIGN_OR_RETURN(Tensor v, fill_value(ctx.node()));
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, v.dtype(), dims));
  const size_t es = dtype_size(v.dtype());
  auto* dst = static_cast<uint8_t*>(out->raw());
  for (int64_t i = 0; i < out->numel(); ++i) std::memcpy(dst + i * es, v.raw(), es);
  return Status();
}

Status constant_of_shape_infer(InferContext& ctx) {
  auto v = fill_value(ctx.node());
  if (!v.ok()) return v.status();
  if (auto dims = known_ints(ctx, 0)) {
    for (int64_t d : *dims)
      if (d < 0) return Status::invalid("ConstantOfShape shape " + dims_to_string(*dims) + " has a negative dim");
    ctx.set_output(0, v->dtype(), to_shape(*dims));
    return Status();
  }
  if (auto entries = known_shape_entries(ctx, 0)) {
    Shape out;
    for (const ShapeEntry& e : *entries) out.push_back(e.dim);
    ctx.set_output(0, v->dtype(), out);
    return Status();
  }
  const std::optional<Shape>* ss = ctx.input_shape(0);
  std::optional<Shape> out;
  if (ss && *ss && (*ss)->size() == 1 && (**ss)[0].is_static()) out = unknown_dims((**ss)[0].value);
  ctx.set_output(0, v->dtype(), out);
  return Status();
}
}  // namespace

void register_constant(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Constant", .since_version = 1, .min_inputs = 0, .max_inputs = 0,
                 .infer = constant_infer, .kernel = constant_kernel});
  r.add(OpSchema{.op_type = "ConstantOfShape", .since_version = 9, .min_inputs = 1, .max_inputs = 1,
                 .infer = constant_of_shape_infer, .kernel = constant_of_shape_kernel});
}

}  // namespace ferry::ops
