// The com.ferry fused ops' `post_ops` list (with `post_op_alpha` / `post_op_beta`) mapped to oneDNN
// post-ops. Shared by the cpu kernels of FusedConv and FusedMatMul.
#pragma once
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::backends::cpu {

struct PostOp {
  std::string kind;  // "sum", "Relu", "LeakyRelu", ...
  float alpha = 0, beta = 0;
};

// The node's post-op list; an error when the attribute lengths disagree.
Result<std::vector<PostOp>> read_post_ops(const ir::Node& node);
// Whether every post-op has a oneDNN equivalent (and `sum` appears at most once).
bool post_ops_supported(const std::vector<PostOp>& ops);
// Appends the oneDNN post-ops for `ops` (sum adds the destination's previous contents: the caller
// puts the residual there before executing).
Status append_post_ops(const std::vector<PostOp>& ops, dnnl::post_ops& out);
// Index of the `sum` post-op, -1 when none.
int sum_index(const std::vector<PostOp>& ops);

}  // namespace ferry::backends::cpu
