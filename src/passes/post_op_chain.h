// The activation/residual chain after a Conv or MatMul that fuse_conv_post_ops and
// fuse_matmul_post_ops fold into post_ops: each link's input is read by that link only (and is not a
// graph output), so removing the intermediates changes nothing else.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/util/post_ops.h"
#include "passes/pass_util.h"

namespace ferry::passes {

struct PostOpChain {
  std::vector<ir::Node*> covered;   // chain nodes, in order
  std::vector<ops::PostOp> post;    // their post-ops
  ir::Value* residual = nullptr;    // Z of the `sum` post-op
  ir::Value* out = nullptr;         // the chain's final value
};

// The post-op an activation node computes on its input 0 (Relu, LeakyRelu, Clip with constant or omitted
// bounds, Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu opset 20 (erf or tanh), Elu, Mish, Softplus, Abs).
std::optional<ops::PostOp> post_op_of(const ir::Node& n);

// Extends from y (the op's result): activations, Sigmoid->Mul(x, sigmoid) as Silu, and one residual
// Add with a non-constant operand of y's exact shape (`sum`).
PostOpChain collect_post_ops(const Uses& uses, ir::Value* y);

// Sets post_ops/post_op_alpha/post_op_beta on n (nothing when the chain is empty).
void set_post_op_attrs(ir::Node& n, const std::vector<ops::PostOp>& post);

// Replaces `covered` (the op and what it already absorbed, e.g. a bias Add) and the chain's nodes by
// one com.ferry `op_type` node with inputs (a, b, bias?, Z?), `attrs` and the chain's post-ops.
ir::Node* fuse_with_chain(ir::Graph& g, std::vector<ir::Node*> covered, const PostOpChain& chain,
                          const std::string& op_type, ir::Value* a, ir::Value* b, ir::Value* bias,
                          std::map<std::string, ir::Attribute> attrs);

}  // namespace ferry::passes
