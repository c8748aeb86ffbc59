// Shape (with the start/end attributes of opset 15) and Size: metadata of a tensor as int64 tensors.
#include <algorithm>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

// The [start, end) range of dims Shape returns for a tensor of `rank`, clamped like Python slicing.
std::pair<int64_t, int64_t> shape_range(const ir::Node& node, int64_t rank) {
  int64_t start = node.opset >= 15 ? node.attr_int("start", 0) : 0;
  int64_t end = node.opset >= 15 ? node.attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

Status shape_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  auto [start, end] = shape_range(ctx.node(), x->rank());
  std::vector<int64_t> dims(x->dims().begin() + start, x->dims().begin() + end);
  ctx.set_output(0, Tensor::from_vector<int64_t>(dims));
  return Status();
}

Status shape_infer(InferContext& ctx) {
  int rank = ctx.input_rank(0);
  if (rank < 0) {
    ctx.set_output(0, DType::kInt64, Shape{Dim()});
    return Status();
  }
  auto [start, end] = shape_range(ctx.node(), rank);
  ctx.set_output(0, DType::kInt64, Shape{Dim(end - start)});
  return Status();
}

Status size_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  ctx.set_output(0, Tensor::scalar<int64_t>(x->numel()));
  return Status();
}

Status size_infer(InferContext& ctx) {
  ctx.set_output(0, DType::kInt64, Shape{});
  return Status();
}
}  // namespace

void register_shape(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Shape", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = shape_infer, .kernel = shape_kernel});
  r.add(OpSchema{.op_type = "Size", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = size_infer, .kernel = size_kernel});
}

}  // namespace ferry::ops
