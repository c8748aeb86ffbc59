// The post-op chain of the com.ferry fused ops (FusedConv, FusedMatMul): attribute `post_ops` (strings)
// with parallel `post_op_alpha`/`post_op_beta` (floats, same length, 0 when unused), applied in order
// to the op's result y. Names and parameters match oneDNN's eltwise/sum post-ops one for one, so the cpu
// backend validates with the same reader. docs/passes.md lists the exact formulas.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::ops {

struct PostOp {
  std::string name;  // "sum", "Relu", "LeakyRelu", "Clip", ...
  float alpha = 0, beta = 0;
  bool is_sum() const { return name == "sum"; }
};

// Whether `name` is a post-op the fused ops understand.
bool is_known_post_op(const std::string& name);

// Reads and checks the node's post-op attributes: known names, equal lengths, `sum` at most once.
// Missing attributes are an empty chain.
Result<std::vector<PostOp>> read_post_ops(const ir::Node& node);

// Whether the chain uses `sum` (then the node's residual input Z must be given).
bool has_sum(const std::vector<PostOp>& ops);

// One element-wise post-op (not `sum`) on a value.
double apply_eltwise_post_op(const PostOp& op, double x);

// Applies the chain in order to y[0..n); `z` (same count) is the residual for `sum` (may be null when
// the chain has none).
void apply_post_ops(const std::vector<PostOp>& ops, double* y, int64_t n, const double* z);

}  // namespace ferry::ops
