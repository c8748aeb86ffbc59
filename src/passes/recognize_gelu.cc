// GELU as torch 1.13 exports it, -> Gelu (opset 20):
//   erf form:  Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5), also with Mul(x, 1/sqrt2) and the 0.5
//              applied to x or to the (1 + erf) factor first, operands in either order;
//   tanh form: the same tail around 1 + Tanh(Mul(sqrt(2/pi), Add(x, Mul(0.044715, Pow(x, 3))))).
// Every intermediate must be read only inside the pattern.
#include <cmath>

#include "passes/passes.h"

namespace ferry::passes {

namespace {
constexpr double kTol = 1e-4;

// n is a binary op with one input constant scalar ~= c; returns the other input.
ir::Value* with_scalar(const ir::Node* n, double c) {
  if (!n || n->num_inputs() != 2 || !n->has_input(0) || !n->has_input(1)) return nullptr;
  if (is_scalar(n->inputs[1], c, kTol)) return n->inputs[0];
  if (is_scalar(n->inputs[0], c, kTol)) return n->inputs[1];
  return nullptr;
}

// x / sqrt2 or x * (1/sqrt2): returns x.
ir::Value* scaled_by_inv_sqrt2(const ir::Value* v, std::vector<ir::Node*>& cov) {
  if (ir::Node* d = producer_op(v, "Div"); d && d->has_input(1) && is_scalar(d->inputs[1], std::sqrt(2.0), kTol)) {
    cov.push_back(d);
    return d->inputs[0];
  }
  if (ir::Node* m = producer_op(v, "Mul"))
    if (ir::Value* x = with_scalar(m, 1.0 / std::sqrt(2.0))) {
      cov.push_back(m);
      return x;
    }
  return nullptr;
}

// sqrt(2/pi) * (x + 0.044715 * x^3): returns x.
ir::Value* tanh_inner(const ir::Value* v, std::vector<ir::Node*>& cov) {
  ir::Node* m = producer_op(v, "Mul");
  ir::Value* sum = with_scalar(m, std::sqrt(2.0 / M_PI));
  ir::Node* add = producer_op(sum, "Add");
  if (!add || add->num_inputs() != 2) return nullptr;
  for (int i = 0; i < 2; ++i) {
    ir::Value* x = add->inputs[i];
    ir::Node* cm = producer_op(add->inputs[1 - i], "Mul");
    ir::Value* cube = with_scalar(cm, 0.044715);
    ir::Node* pw = producer_op(cube, "Pow");
    if (pw && pw->inputs[0] == x && pw->num_inputs() == 2 && is_scalar(pw->inputs[1], 3.0, 1e-9)) {
      cov.insert(cov.end(), {m, add, cm, pw});
      return x;
    }
  }
  return nullptr;
}

struct Match {
  ir::Value* x = nullptr;
  std::vector<ir::Node*> covered;
  ir::Value* out = nullptr;
  bool tanh = false;
};

// From the (1 + erf/tanh) value `one_plus`: the product with x and 0.5 in any of torch's orders.
bool match_tail(const Uses& uses, ir::Value* one_plus, ir::Value* x, Match& m) {
  if (!uses.single_use(one_plus)) return false;
  ir::Node* m1 = uses.users(one_plus)[0];
  if (m1->op_type != "Mul" || !m1->domain.empty() || m1->num_outputs() != 1 || !m1->outputs[0]) return false;
  ir::Value* other = other_input(m1, one_plus);
  if (!other) return false;
  auto single_mul_user = [&](ir::Value* v) -> ir::Node* {
    if (!uses.single_use(v)) return nullptr;
    ir::Node* u = uses.users(v)[0];
    return u->op_type == "Mul" && u->domain.empty() && u->num_outputs() == 1 && u->outputs[0] ? u : nullptr;
  };
  if (other == x || is_scalar(other, 0.5, kTol)) {
    // (a) Mul(x, 1+e) then * 0.5, or (b) Mul(1+e, 0.5) then * x
    ir::Node* m2 = single_mul_user(m1->outputs[0]);
    if (!m2) return false;
    ir::Value* last = other_input(m2, m1->outputs[0]);
    if (!(other == x ? is_scalar(last, 0.5, kTol) : last == x)) return false;
    m.covered.insert(m.covered.end(), {m1, m2});
    m.out = m2->outputs[0];
    return true;
  }
  // (c) Mul(Mul(x, 0.5), 1+e)
  ir::Node* h = producer_op(other, "Mul");
  if (h && with_scalar(h, 0.5) == x && uses.single_use(other)) {
    m.covered.insert(m.covered.end(), {h, m1});
    m.out = m1->outputs[0];
    return true;
  }
  return false;
}
}  // namespace

Result<int> recognize_gelu(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& act, const Uses& uses) -> Result<bool> {
    const bool is_erf = act.op_type == "Erf", is_tanh = act.op_type == "Tanh";
    if ((!is_erf && !is_tanh) || !act.domain.empty() || !act.has_input(0) || act.num_outputs() != 1) return false;
    Match m;
    m.tanh = is_tanh;
    std::vector<ir::Node*> inner;
    m.x = is_erf ? scaled_by_inv_sqrt2(act.inputs[0], inner) : tanh_inner(act.inputs[0], inner);
    if (!m.x || !is_floating(m.x->dtype)) return false;
    // Intermediates of the inner part: read only by the pattern.
    bool ok = uses.single_use(act.inputs[0]);
    for (ir::Node* n : inner)
      if (n->outputs[0] != act.inputs[0]) ok = ok && uses.single_use(n->outputs[0]);
    if (!ok || !uses.single_use(act.outputs[0])) return false;
    ir::Node* add = uses.users(act.outputs[0])[0];
    if (add->op_type != "Add" || !add->domain.empty() || add->num_outputs() != 1 || !add->outputs[0] ||
        !is_scalar(other_input(add, act.outputs[0]), 1.0, 1e-9))
      return false;
    if (!match_tail(uses, add->outputs[0], m.x, m)) return false;
    if (!same_shape(m.out, m.x)) return false;  // no broadcasting hidden in the constants
    std::vector<ir::Node*> covered = inner;
    covered.push_back(&act);
    covered.push_back(add);
    covered.insert(covered.end(), m.covered.begin(), m.covered.end());
    ir::Node* gelu = replace_with(g, covered, "Gelu", "", 20, {m.x}, m.out);
    if (m.tanh) gelu->attrs["approximate"] = make_string("tanh");
    return true;
  });
}

}  // namespace ferry::passes
