#include "ops/util/broadcast.h"

namespace ferry::ops {

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> is = strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : is[i];
  return s;
}

Status infer_same_as_input(InferContext& ctx, int input) {
  const ir::Value* v = ctx.input(input);
  if (!v) return Status();
  ctx.set_output(0, v->dtype, v->shape);
  return Status();
}

Status infer_broadcast(InferContext& ctx, DType out_dtype) {
  DType dt = out_dtype == DType::kUndefined ? ctx.input_dtype(0) : out_dtype;
  std::optional<Shape> shape = Shape{};
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    const ir::Value* v = ctx.input(i);
    if (!v || !v->shape || !shape) {
      shape.reset();
      continue;
    }
    if (is_static(*shape) && is_static(*v->shape)) {
      auto r = broadcast_dims(static_dims(*shape), static_dims(*v->shape));
      if (!r.ok()) return r.status();
      shape = to_shape(*r);
    } else {
      shape = broadcast_shapes(*shape, *v->shape);
    }
  }
  ctx.set_output(0, dt, shape);
  return Status();
}

}  // namespace ferry::ops
