// LayerNorm as exported before opset 17:
//   m = ReduceMean(x, axes); d = Sub(x, m); v = ReduceMean(Pow(d, 2) | Mul(d, d), axes);
//   y = Div(d, Sqrt(Add(v, eps))); y = Mul(y, gamma); y = Add(y, beta)   (Mul/Add operands either order)
// over the last k axes (keepdims) -> LayerNormalization (opset 17) {axis = -k, epsilon}. gamma (and beta
// when present) are constants whose shape is the normalized dims (leading 1s allowed); they are stored
// with exactly those dims, as LayerNormalization wants.
#include <algorithm>

#include "passes/passes.h"

namespace ferry::passes {

namespace {
ir::Node* single_user(const Uses& uses, const ir::Value* v, const char* op) {
  if (!uses.single_use(v)) return nullptr;
  ir::Node* u = uses.users(v)[0];
  return u->op_type == op && u->domain.empty() && u->num_outputs() == 1 && u->outputs[0] ? u : nullptr;
}

// Normalized axes of a keepdims ReduceMean as negative numbers, when they are the last k axes.
std::optional<int64_t> last_axes(const ir::Node& rm, int64_t rank) {
  if (rm.attr_int("keepdims", 1) != 1 || rank <= 0) return std::nullopt;
  std::vector<int64_t> axes;
  if (rm.opset >= 18) {
    const Tensor* t = rm.has_input(1) ? constant_of(rm.inputs[1]) : nullptr;
    if (!t) return std::nullopt;
    axes = t->to_int64_vector();
  } else {
    axes = rm.attr_ints("axes");
  }
  if (axes.empty()) return std::nullopt;  // all axes (or noop_with_empty_axes): not a layer norm shape
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a >= 0) a -= rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const int64_t k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i)
    if (axes[i] != i - k) return std::nullopt;
  return k;
}

// gamma/beta reshaped to the normalized dims, or nullopt when it is not exactly per-element of them or
// has more dims than x (it would broadcast the result beyond x's shape).
std::optional<Tensor> affine_param(const ir::Value* v, const std::vector<int64_t>& norm_dims, DType dt, size_t x_rank) {
  const Tensor* t = constant_of(v);
  if (!t || t->dtype() != dt || static_cast<size_t>(t->rank()) > x_rank) return std::nullopt;
  std::vector<int64_t> d = t->dims();
  while (d.size() > norm_dims.size() && d.front() == 1) d.erase(d.begin());
  if (d != norm_dims) return std::nullopt;
  auto r = t->reshaped(norm_dims);
  if (!r.ok()) return std::nullopt;
  return *r;
}
}  // namespace

Result<int> recognize_layer_norm(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& rm1, const Uses& uses) -> Result<bool> {
    if (rm1.op_type != "ReduceMean" || !rm1.domain.empty() || !rm1.has_input(0) || rm1.num_outputs() != 1) return false;
    ir::Value* x = rm1.inputs[0];
    // The rank and the normalized (last k) dims must be known; the leading dims may be dynamic.
    if (!x->shape || !is_floating(x->dtype)) return false;
    const int64_t rank = static_cast<int64_t>(x->shape->size());
    auto k = last_axes(rm1, rank);
    if (!k) return false;
    std::vector<int64_t> norm_dims;
    for (int64_t i = rank - *k; i < rank; ++i) {
      const Dim& d = (*x->shape)[static_cast<size_t>(i)];
      if (!d.is_static()) return false;
      norm_dims.push_back(d.value);
    }
    ir::Node* sub = single_user(uses, rm1.outputs[0], "Sub");
    if (!sub || sub->inputs[0] != x || sub->inputs[1] != rm1.outputs[0]) return false;
    ir::Value* d = sub->outputs[0];
    // d is read by the square and by the Div, nothing else.
    if (uses.is_output(d) || uses.use_count(d) != (2 + 0) || uses.users(d).size() != 2) {
      // Mul(d, d) reads d twice: 3 uses (square twice + Div)
      if (!(uses.use_count(d) == 3 && uses.users(d).size() == 2 && !uses.is_output(d))) return false;
    }
    ir::Node* sq = nullptr;
    ir::Node* div = nullptr;
    for (ir::Node* u : uses.users(d)) {
      if (u->op_type == "Pow" && u->inputs[0] == d && u->num_inputs() == 2 && is_scalar(u->inputs[1], 2.0, 1e-9)) sq = u;
      else if (u->op_type == "Mul" && u->num_inputs() == 2 && u->inputs[0] == d && u->inputs[1] == d) sq = u;
      else if (u->op_type == "Div" && u->inputs[0] == d) div = u;
    }
    if (!sq || !div || !sq->domain.empty() || !div->domain.empty()) return false;
    if ((sq->op_type == "Pow") != (uses.use_count(d) == 2)) return false;
    ir::Node* rm2 = single_user(uses, sq->outputs[0], "ReduceMean");
    if (!rm2 || rm2->inputs[0] != sq->outputs[0] || last_axes(*rm2, rank) != k) return false;
    ir::Node* add_eps = single_user(uses, rm2->outputs[0], "Add");
    if (!add_eps) return false;
    auto eps = scalar_of(other_input(add_eps, rm2->outputs[0]));
    if (!eps || *eps < 0) return false;
    ir::Node* sqrt = single_user(uses, add_eps->outputs[0], "Sqrt");
    if (!sqrt || div->inputs[1] != sqrt->outputs[0] || !uses.single_use(sqrt->outputs[0])) return false;
    ir::Node* mul = single_user(uses, div->outputs[0], "Mul");
    if (!mul) return false;
    auto gamma = affine_param(other_input(mul, div->outputs[0]), norm_dims, x->dtype, x->shape->size());
    if (!gamma) return false;
    std::vector<ir::Node*> covered = {&rm1, sub, sq, rm2, add_eps, sqrt, div, mul};
    ir::Value* out = mul->outputs[0];
    std::optional<Tensor> beta;
    if (ir::Node* add = single_user(uses, out, "Add")) {
      beta = affine_param(other_input(add, out), norm_dims, x->dtype, x->shape->size());
      if (beta) {
        covered.push_back(add);
        out = add->outputs[0];
      }
    }
    ir::Value* gv = add_constant(g, rm1.name + "_ln_scale", *gamma);
    std::vector<ir::Value*> ins = {x, gv};
    if (beta) ins.push_back(add_constant(g, rm1.name + "_ln_bias", *beta));
    ir::Node* ln = replace_with(g, covered, "LayerNormalization", "", 17, ins, out);
    ln->attrs["axis"] = make_int(-*k);
    ln->attrs["epsilon"] = make_float(static_cast<float>(*eps));
    return true;
  });
}

}  // namespace ferry::passes
