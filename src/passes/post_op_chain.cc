#include "passes/post_op_chain.h"

#include <cmath>

#include <limits>

namespace ferry::passes {

std::optional<ops::PostOp> post_op_of(const ir::Node& n) {
  if (!n.domain.empty() || n.num_outputs() != 1 || !n.outputs[0] || !n.has_input(0)) return std::nullopt;
  const std::string& op = n.op_type;
  auto simple = [&](const char* name, float a = 0, float b = 0) -> std::optional<ops::PostOp> {
    if (n.num_inputs() != 1) return std::nullopt;
    return ops::PostOp{name, a, b};
  };
  if (op == "Relu") return simple("Relu");
  if (op == "LeakyRelu") return simple("LeakyRelu", n.attr_float("alpha", 0.01f));
  if (op == "Sigmoid") return simple("Sigmoid");
  if (op == "Tanh") return simple("Tanh");
  if (op == "HardSigmoid") return simple("HardSigmoid", n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f));
  if (op == "HardSwish") return simple("HardSwish");
  if (op == "Elu") return simple("Elu", n.attr_float("alpha", 1.0f));
  if (op == "Mish") return simple("Mish");
  if (op == "Softplus") return simple("Softplus");
  if (op == "Abs") return simple("Abs");
  if (op == "Gelu" && n.opset >= 20) {
    const std::string approx = n.attr_string("approximate", "none");
    if (approx == "none") return simple("Gelu");
    if (approx == "tanh") return simple("GeluTanh");
    return std::nullopt;
  }
  if (op == "Clip") {
    float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
    if (n.opset < 11) {
      if (n.num_inputs() != 1) return std::nullopt;
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
    } else {
      if (n.num_inputs() > 3) return std::nullopt;
      for (int i = 1; i < 3; ++i) {
        if (!n.has_input(i)) continue;  // omitted bound: unbounded on that side
        auto v = scalar_of(n.inputs[i]);
        if (!v) return std::nullopt;
        (i == 1 ? lo : hi) = static_cast<float>(*v);
      }
    }
    return ops::PostOp{"Clip", lo, hi};
  }
  return std::nullopt;
}

PostOpChain collect_post_ops(const Uses& uses, ir::Value* y) {
  PostOpChain c;
  c.out = y;
  ir::Value* cur = y;
  while (true) {
    const auto& users = uses.users(cur);
    // Silu as torch exports it: s = Sigmoid(x); Mul(x, s) (either order); x read by exactly those two.
    // HardSwish as torch exports it below opset 14: HardSigmoid(x) with alpha 1/6 and beta 1/2, then
    // Mul(x, that) (mobilenet_v3: 21 such pairs ran as standalone nodes).
    // Mul(x, gate(x)) has x's shape by construction, so no shape is needed: it fuses with dynamic
    // dims too (a gear or range compile, where inferred dims are unknown).
    if (!uses.is_output(cur) && uses.use_count(cur) == 2 && users.size() == 2) {
      auto is_gate = [](const ir::Node* n) {
        if (!n->domain.empty()) return false;
        if (n->op_type == "Sigmoid") return true;
        return n->op_type == "HardSigmoid" && std::fabs(n->attr_float("alpha", 0.2f) - 1.f / 6) < 1e-6f &&
               std::fabs(n->attr_float("beta", 0.5f) - 0.5f) < 1e-6f;
      };
      ir::Node* sig = is_gate(users[0]) ? users[0] : users[1];
      ir::Node* mul = sig == users[0] ? users[1] : users[0];
      if (is_gate(sig) && mul->op_type == "Mul" && mul->domain.empty() &&
          sig->num_outputs() == 1 && sig->outputs[0] && uses.single_use(sig->outputs[0]) && mul->num_outputs() == 1 &&
          mul->outputs[0] && other_input(mul, cur) == sig->outputs[0]) {
        c.covered.push_back(sig);
        c.covered.push_back(mul);
        c.post.push_back({sig->op_type == "Sigmoid" ? "Silu" : "HardSwish", 0, 0});
        cur = c.out = mul->outputs[0];
        continue;
      }
    }
    if (!uses.single_use(cur) || users.size() != 1) break;
    ir::Node* n = users[0];
    if (n->num_outputs() != 1 || !n->outputs[0] || n->outputs[0]->dtype != cur->dtype) break;
    if (auto p = post_op_of(*n); p && n->inputs[0] == cur) {
      c.covered.push_back(n);
      c.post.push_back(*p);
      cur = c.out = n->outputs[0];
      continue;
    }
    if (n->op_type == "Add" && n->domain.empty() && !c.residual) {
      ir::Value* z = other_input(n, cur);
      if (z && !z->is_constant() && z->dtype == cur->dtype && same_shape(z, cur) && same_shape(n->outputs[0], cur)) {
        c.covered.push_back(n);
        c.post.push_back({"sum", 0, 0});
        c.residual = z;
        cur = c.out = n->outputs[0];
        continue;
      }
    }
    break;
  }
  return c;
}

void set_post_op_attrs(ir::Node& n, const std::vector<ops::PostOp>& post) {
  if (post.empty()) return;
  std::vector<std::string> names;
  std::vector<float> alpha, beta;
  for (const auto& p : post) {
    names.push_back(p.name);
    alpha.push_back(p.alpha);
    beta.push_back(p.beta);
  }
  n.attrs["post_ops"] = make_strings(names);
  n.attrs["post_op_alpha"] = make_floats(alpha);
  n.attrs["post_op_beta"] = make_floats(beta);
}

ir::Node* fuse_with_chain(ir::Graph& g, std::vector<ir::Node*> covered, const PostOpChain& chain,
                          const std::string& op_type, ir::Value* a, ir::Value* b, ir::Value* bias,
                          std::map<std::string, ir::Attribute> attrs) {
  covered.insert(covered.end(), chain.covered.begin(), chain.covered.end());
  std::vector<ir::Value*> inputs = {a, b, bias};
  if (chain.residual) {
    inputs.push_back(chain.residual);  // Z after an empty bias slot when there is no bias
  } else if (!bias) {
    inputs.pop_back();
  }
  ir::Node* f = replace_with(g, covered, op_type, "com.ferry", 1, inputs, chain.out);
  f->attrs = std::move(attrs);
  set_post_op_attrs(*f, chain.post);
  return f;
}

}  // namespace ferry::passes
