// EyeLike (ones on the k-th diagonal of a 2-D shape) and Trilu (keep the upper or lower triangle of the
// last two dims, offset by k).
#include <algorithm>

#include "core/onnx_dtype.h"
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<DType> eye_dtype(const ir::Node& n, DType input) {
  if (!n.has_attr("dtype")) return input;
  int64_t code = n.attr_int("dtype", 1);
  return dtype_from_onnx(code).with_context("EyeLike dtype " + std::to_string(code));
}

Status eye_like_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  if (x->rank() != 2) return Status::invalid("EyeLike input must be 2-D, got " + x->describe());
  FERRY_ASSIGN_OR_RETURN(DType dt, eye_dtype(ctx.node(), x->dtype()));
  const int64_t k = ctx.node().attr_int("k", 0);
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, dt, x->dims()));
  const int64_t rows = x->dim(0), cols = x->dim(1);
  Tensor one = Tensor::scalar<float>(1.f).cast(dt);
  const size_t es = dtype_size(dt);
  auto* o = static_cast<uint8_t*>(out->raw());
  for (int64_t i = 0; i < rows; ++i) {
    // Compare in a form that cannot overflow for extreme k.
    if (k >= cols || k <= -rows) break;
    int64_t j = i + k;
    if (j >= 0 && j < cols) std::memcpy(o + (i * cols + j) * es, one.raw(), es);
  }
  return Status();
}

Status eye_like_infer(InferContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(DType dt, eye_dtype(ctx.node(), ctx.input_dtype(0)));
  const std::optional<Shape>* in = ctx.input_shape(0);
  ctx.set_output(0, dt, in ? *in : std::nullopt);
  return Status();
}

Status trilu_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  if (x->rank() < 2) return Status::invalid("Trilu input must have rank >= 2, got " + x->describe());
  int64_t k = 0;
  if (has_tensor_input(ctx, 1)) {
    FERRY_ASSIGN_OR_RETURN(k, int_scalar(ctx.input(1), "k"));
  }
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), x->dims()));
  const int64_t rows = x->dim(-2), cols = x->dim(-1);
  const int64_t mats = rows * cols == 0 ? 0 : x->numel() / (rows * cols);
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  // Clamp k so j - i comparisons cannot overflow.
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        const int64_t off = (m * rows + i) * cols + j;
        if (keep) std::memcpy(dst + off * es, src + off * es, es);  // the rest stays zero
      }
  return Status();
}
}  // namespace

void register_eye_trilu(OpRegistry& r) {
  r.add(OpSchema{.op_type = "EyeLike", .since_version = 9, .min_inputs = 1, .max_inputs = 1,
                 .infer = eye_like_infer, .kernel = eye_like_kernel});
  r.add(OpSchema{.op_type = "Trilu", .since_version = 14, .min_inputs = 1, .max_inputs = 2,
                 .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); }, .kernel = trilu_kernel});
}

}  // namespace ferry::ops
