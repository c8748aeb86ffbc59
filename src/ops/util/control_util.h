// Helpers shared by the control-flow, sequence, RNN and signal ops (group ops-control).
#pragma once
#include "core/onnx_dtype.h"
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {


// The graph held by attribute `name`, mutable so inference can annotate it; null when absent.
ir::Graph* mutable_subgraph(ir::Node& node, const std::string& name);

// Copies what is known about `src` (kind, dtype, shape) onto subgraph input `dst`, keeping what the
// model declared where the caller has nothing better.
void seed_value_type(ir::Value& dst, ir::ValueKind kind, DType dtype, const std::optional<Shape>& shape);

// Copies a body output's kind/dtype/shape onto node output i (no-op when omitted).
void copy_value_type(InferContext& ctx, int i, const ir::Value& from);

// Rows [start, start+len) of `t` along `axis` as a new tensor.
Result<Tensor> slice_along(const Tensor& t, int axis, int64_t start, int64_t len);
// Concatenates tensors of equal dtype along `axis` (all dims but `axis` must agree).
Result<Tensor> concat_along(const std::vector<Tensor>& parts, int axis);
// Stacks equally shaped tensors along a new axis `axis` (0 <= axis <= rank).
Result<Tensor> stack_along(const std::vector<Tensor>& parts, int axis);

// Reads a scalar (or one-element) integer tensor.
Result<int64_t> scalar_int(const Tensor& t, const char* what);

}  // namespace ferry::ops
