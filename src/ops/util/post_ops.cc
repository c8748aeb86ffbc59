#include "ops/util/post_ops.h"

#include <algorithm>
#include <cmath>

namespace ferry::ops {

namespace {
const char* const kNames[] = {"sum",   "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh",     "HardSigmoid",
                              "HardSwish", "Silu", "Gelu", "GeluTanh", "Elu", "Mish", "Softplus",
                              "Abs", "Mul", "Add"};

double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

bool is_known_post_op(const std::string& name) {
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

Result<std::vector<PostOp>> read_post_ops(const ir::Node& node) {
  std::vector<PostOp> out;
  const ir::Attribute* names = node.attr("post_ops");
  if (!names) return out;
  if (names->kind != ir::Attribute::Kind::kStrings)
    return Status::invalid("attribute post_ops must be a list of strings");
  std::vector<float> alpha = node.attr_floats("post_op_alpha"), beta = node.attr_floats("post_op_beta");
  const size_t n = names->strings.size();
  if ((node.has_attr("post_op_alpha") && alpha.size() != n) || (node.has_attr("post_op_beta") && beta.size() != n))
    return Status::invalid("post_op_alpha and post_op_beta must have one value per post-op (" + std::to_string(n) + ")");
  int sums = 0;
  for (size_t i = 0; i < n; ++i) {
    PostOp p{names->strings[i], i < alpha.size() ? alpha[i] : 0.0f, i < beta.size() ? beta[i] : 0.0f};
    if (!is_known_post_op(p.name)) return Status::invalid("unknown post-op '" + p.name + "'");
    if (p.is_sum() && ++sums > 1) return Status::invalid("post-op 'sum' may appear only once");
    out.push_back(p);
  }
  return out;
}

bool has_sum(const std::vector<PostOp>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const PostOp& p) { return p.is_sum(); });
}

double apply_eltwise_post_op(const PostOp& op, double x) {
  const std::string& n = op.name;
  const double a = op.alpha, b = op.beta;
  if (n == "Relu") return x > 0 ? x : 0.0;
  if (n == "LeakyRelu") return x < 0 ? a * x : x;
  if (n == "Clip") return std::min(std::max(x, a), b);
  if (n == "Sigmoid") return sigmoid(x);
  if (n == "Tanh") return std::tanh(x);
  if (n == "HardSigmoid") return std::max(0.0, std::min(1.0, a * x + b));
  if (n == "HardSwish") return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
  if (n == "Silu") return x * sigmoid(x);
  if (n == "Gelu") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (n == "GeluTanh") return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  if (n == "Elu") return x > 0 ? x : a * (std::exp(x) - 1.0);
  if (n == "Mish") return x * std::tanh(softplus(x));
  if (n == "Softplus") return softplus(x);
  if (n == "Abs") return std::fabs(x);
  if (n == "Mul") return x * a;
  if (n == "Add") return x + a;
  return x;  // read_post_ops rejected anything else
}

void apply_post_ops(const std::vector<PostOp>& ops, double* y, int64_t n, const double* z) {
  for (const PostOp& op : ops) {
    if (op.is_sum()) {
      for (int64_t i = 0; i < n; ++i) y[i] += z[i];
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = apply_eltwise_post_op(op, y[i]);
    }
  }
}

}  // namespace ferry::ops
