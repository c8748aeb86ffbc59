#include "backends/cpu/post_ops.h"

#include <tuple>

namespace ferry::backends::cpu {

using alg = dnnl::algorithm;

Result<std::vector<PostOp>> read_post_ops(const ir::Node& node) {
  std::vector<PostOp> ops;
  const ir::Attribute* names = node.attr("post_ops");
  if (!names) return ops;
  if (names->kind != ir::Attribute::Kind::kStrings)
    return Status::invalid(node.label() + ": post_ops must be a list of strings");
  const std::vector<float> alpha = node.attr_floats("post_op_alpha");
  const std::vector<float> beta = node.attr_floats("post_op_beta");
  const size_t n = names->strings.size();
  if ((!alpha.empty() && alpha.size() != n) || (!beta.empty() && beta.size() != n))
    return Status::invalid(node.label() + ": post_op_alpha/post_op_beta must have one value per post-op");
  for (size_t i = 0; i < n; ++i)
    ops.push_back({names->strings[i], alpha.empty() ? 0.f : alpha[i], beta.empty() ? 0.f : beta[i]});
  return ops;
}

namespace {

// One ferry post-op as oneDNN eltwise steps (algorithm, alpha, beta); empty when there is none.
std::vector<std::tuple<alg, float, float>> eltwise_steps(const PostOp& op) {
  const std::string& k = op.kind;
  if (k == "Relu") return {{alg::eltwise_relu, 0.f, 0.f}};
  if (k == "LeakyRelu") return {{alg::eltwise_relu, op.alpha, 0.f}};
  if (k == "Clip") return {{alg::eltwise_clip, op.alpha, op.beta}};
  if (k == "Sigmoid") return {{alg::eltwise_logistic, 0.f, 0.f}};
  if (k == "Tanh") return {{alg::eltwise_tanh, 0.f, 0.f}};
  // oneDNN 2.6 has no hardsigmoid: max(0, min(1, alpha*x + beta)) is linear then clip.
  if (k == "HardSigmoid") return {{alg::eltwise_linear, op.alpha, op.beta}, {alg::eltwise_clip, 0.f, 1.f}};
  if (k == "HardSwish") return {{alg::eltwise_hardswish, 0.f, 0.f}};
  if (k == "Silu") return {{alg::eltwise_swish, 1.f, 0.f}};
  if (k == "Gelu") return {{alg::eltwise_gelu_erf, 0.f, 0.f}};
  if (k == "GeluTanh") return {{alg::eltwise_gelu_tanh, 0.f, 0.f}};
  if (k == "Elu") return {{alg::eltwise_elu, op.alpha, 0.f}};
  if (k == "Mish") return {{alg::eltwise_mish, 0.f, 0.f}};
  if (k == "Softplus") return {{alg::eltwise_soft_relu, 0.f, 0.f}};
  if (k == "Abs") return {{alg::eltwise_abs, 0.f, 0.f}};
  if (k == "Mul") return {{alg::eltwise_linear, op.alpha, 0.f}};
  if (k == "Add") return {{alg::eltwise_linear, 1.f, op.alpha}};
  return {};
}

}  // namespace

int sum_index(const std::vector<PostOp>& ops) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == "sum") return static_cast<int>(i);
  return -1;
}

bool post_ops_supported(const std::vector<PostOp>& ops) {
  int sums = 0;
  for (const PostOp& op : ops) {
    if (op.kind == "sum") {
      sums++;
      continue;
    }
    if (eltwise_steps(op).empty()) return false;
  }
  return sums <= 1;
}

Status append_post_ops(const std::vector<PostOp>& ops, dnnl::post_ops& out) {
  for (const PostOp& op : ops) {
    if (op.kind == "sum") {
      out.append_sum(1.f);
      continue;
    }
    auto steps = eltwise_steps(op);
    if (steps.empty()) return Status::unsupported("post-op '" + op.kind + "' has no oneDNN equivalent");
    for (const auto& [a, alpha, beta] : steps) out.append_eltwise(1.f, a, alpha, beta);
  }
  return Status();
}

}  // namespace ferry::backends::cpu
