// OneHot: out[..., j, ...] = on_value where indices == j else off_value, along a new axis of size depth.
// Negative indices count from the end; indices outside [-depth, depth) give an all-off row (as the ONNX
// reference does).
#include <cmath>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<int64_t> depth_of(const Tensor& t) {
  if (t.numel() != 1) return Status::invalid("depth must be a scalar, got " + t.describe());
  double d = t.as_double(0);
  if (!std::isfinite(d) || d < 1 || d > 1e12) return Status::invalid("depth " + std::to_string(d) + " is invalid");
  return static_cast<int64_t>(d);
}

Status one_hot_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, tensor_input(ctx, 0, "indices"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* dt, tensor_input(ctx, 1, "depth"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* vals, tensor_input(ctx, 2, "values"));
  if (vals->numel() != 2) return Status::invalid("values must hold [off_value, on_value], got " + vals->describe());
  if (ind->dtype() == DType::kBool) return Status::invalid("indices must be numeric");
  FERRY_ASSIGN_OR_RETURN(int64_t depth, depth_of(*dt));
  const int64_t r = ind->rank();
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < -(r + 1) || axis > r) return Status::invalid("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += r + 1;
  std::vector<int64_t> dims(ind->dims().begin(), ind->dims().begin() + axis);
  dims.push_back(depth);
  dims.insert(dims.end(), ind->dims().begin() + axis, ind->dims().end());
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, vals->dtype(), dims));
  const size_t es = dtype_size(vals->dtype());
  const auto* off_v = static_cast<const uint8_t*>(vals->raw());
  const uint8_t* on_v = off_v + es;
  auto* o = static_cast<uint8_t*>(out->raw());
  for (int64_t i = 0; i < out->numel(); ++i) std::memcpy(o + i * es, off_v, es);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ind->dims()[d];
  for (int64_t d = axis; d < r; ++d) inner *= ind->dims()[d];
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      double v = ind->as_double(a * inner + b);
      if (!std::isfinite(v)) continue;
      int64_t j = static_cast<int64_t>(v);
      if (j < 0) j += depth;
      if (j < 0 || j >= depth) continue;
      std::memcpy(o + ((a * depth + j) * inner + b) * es, on_v, es);
    }
  return Status();
}

Status one_hot_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(2);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const int64_t r = static_cast<int64_t>((*in)->size());
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < -(r + 1) || axis > r) return Status::invalid("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += r + 1;
  Dim depth;
  if (auto t = known_value(ctx, 1)) {
    auto d = depth_of(*t);
    if (d.ok()) depth = Dim(*d);
  }
  Shape out((*in)->begin(), (*in)->begin() + axis);
  out.push_back(depth);
  out.insert(out.end(), (*in)->begin() + axis, (*in)->end());
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_one_hot(OpRegistry& r) {
  r.add(OpSchema{.op_type = "OneHot", .since_version = 9, .min_inputs = 3, .max_inputs = 3,
                 .infer = one_hot_infer, .kernel = one_hot_kernel});
}

}  // namespace ferry::ops
