// Scaled dot-product attention -> com.ferry FusedAttention:
//   P = Softmax(MatMul(Q, Transpose(K')) (*|/ scalar)? (+ Mask)?, last axis);  Y = MatMul(P, V)
// with the scale optionally applied to Q and/or K^T before the first MatMul (torch 1.13 MultiheadAttention
// divides q by sqrt(d) first; torch 2's export of scaled_dot_product_attention multiplies both by d^-1/4),
// and optionally P guarded as Where(IsNaN(P), 0, P) (torch 2's SDPA export: a fully masked row's NaN
// probabilities become 0), which the fused node keeps as its attribute nan_to_zero. When K^T comes
// from a Transpose read only here, that Transpose is rewritten in place to produce K itself (dropped
// when it then is the identity; it keeps its name, its new output has no ONNX name since no ONNX tensor
// holds it); a constant K^T is stored transposed; any other K^T gets a new Transpose of its last two
// axes. Softmax must be over the last axis only (opset 13+ axis -1, or
// an opset < 13 axis that is the last one, where the 2-D coercion is the same thing). Q, K and V need
// known ranks and equal batch dims; the mask an additive float tensor that broadcasts to the scores.
#include "passes/passes.h"

namespace ferry::passes {

namespace {
ir::Node* produced_by(const ir::Value* v, const char* op) {
  return v && v->producer && v->producer->op_type == op && v->producer->domain.empty() && v->producer->num_outputs() == 1
             ? v->producer
             : nullptr;
}

// v = Mul(x, c) / Mul(c, x) / Div(x, c) with a scalar c: returns x and multiplies *scale.
ir::Value* strip_scale(const Uses& uses, ir::Value* v, double* scale, std::vector<ir::Node*>& cov) {
  if (ir::Node* m = produced_by(v, "Mul"); m && m->num_inputs() == 2 && uses.single_use(v)) {
    for (int i = 0; i < 2; ++i)
      if (auto c = scalar_of(m->inputs[i]); c && m->inputs[1 - i] && !m->inputs[1 - i]->is_constant()) {
        *scale *= *c;
        cov.push_back(m);
        return m->inputs[1 - i];
      }
  }
  if (ir::Node* d = produced_by(v, "Div"); d && d->num_inputs() == 2 && uses.single_use(v)) {
    if (auto c = scalar_of(d->inputs[1]); c && *c != 0) {
      *scale /= *c;
      cov.push_back(d);
      return d->inputs[0];
    }
  }
  return v;
}

// v = Where(IsNaN(p), 0, p) with p read by nothing else: returns p and adds the two nodes to cov.
ir::Value* strip_nan_guard(const Uses& uses, ir::Value* v, std::vector<ir::Node*>& cov) {
  ir::Node* w = produced_by(v, "Where");
  if (!w || w->num_inputs() != 3 || !uses.single_use(v)) return v;
  ir::Value* p = w->inputs[2];
  ir::Node* isnan = produced_by(w->inputs[0], "IsNaN");
  const auto zero = scalar_of(w->inputs[1]);
  if (!p || !isnan || isnan->num_inputs() != 1 || isnan->inputs[0] != p || !uses.single_use(w->inputs[0]) || !zero ||
      *zero != 0 || uses.use_count(p) != 2 || uses.is_output(p) || uses.read_by_subgraph(p) || !p->shape ||
      !v->shape || p->shape->size() != v->shape->size())
    return v;
  cov.push_back(isnan);
  cov.push_back(w);
  return p;
}

bool dims_equal(const Dim& a, const Dim& b) {
  return a.is_static() ? b.is_static() && a.value == b.value : !a.symbol.empty() && a.symbol == b.symbol;
}

// mask's (static) shape broadcasts to scores without changing it.
bool mask_fits(const ir::Value* mask, const ir::Value* scores) {
  auto md = static_shape(mask);
  if (!md || !scores->shape || md->size() > scores->shape->size()) return false;
  const size_t off = scores->shape->size() - md->size();
  for (size_t i = 0; i < md->size(); ++i) {
    const Dim& s = (*scores->shape)[off + i];
    if ((*md)[i] != 1 && !(s.is_static() && s.value == (*md)[i])) return false;
  }
  return true;
}

bool last_axis_softmax(const ir::Node& sm, int64_t rank) {
  int64_t axis = sm.attr_int("axis", sm.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  return axis == rank - 1;
}
}  // namespace

Result<int> recognize_attention(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& m2, const Uses& uses) -> Result<bool> {
    if (m2.op_type != "MatMul" || !m2.domain.empty() || m2.num_inputs() != 2 || !m2.outputs[0]) return false;
    std::vector<ir::Node*> covered;
    ir::Value* p = strip_nan_guard(uses, m2.inputs[0], covered);
    const bool nan_to_zero = p != m2.inputs[0];
    ir::Value* v = m2.inputs[1];
    ir::Node* sm = produced_by(p, "Softmax");
    if (!sm || !(nan_to_zero || uses.single_use(p)) || !sm->has_input(0)) return false;
    ir::Value* s = sm->inputs[0];
    if (!s->shape || s->shape->size() < 3 || !last_axis_softmax(*sm, static_cast<int64_t>(s->shape->size()))) return false;
    if (!uses.single_use(s)) return false;
    ir::Value* mask = nullptr;
    ir::Value* scores = s;
    if (ir::Node* add = produced_by(s, "Add"); add && add->num_inputs() == 2) {
      // The operand that comes from the QK^T MatMul (possibly scaled) is the scores; the other the mask.
      for (int i = 0; i < 2 && !mask; ++i) {
        ir::Value* cand = add->inputs[i];
        double dummy = 1;
        std::vector<ir::Node*> tmp;
        ir::Value* inner = strip_scale(uses, cand, &dummy, tmp);
        if (produced_by(inner, "MatMul") && add->inputs[1 - i] && uses.single_use(cand)) {
          mask = add->inputs[1 - i];
          scores = cand;
        }
      }
      if (!mask || !is_floating(mask->dtype) || mask->dtype != s->dtype || !mask_fits(mask, s)) return false;
      covered.push_back(add);
    }
    double scale = 1.0;
    ir::Value* qk = strip_scale(uses, scores, &scale, covered);
    ir::Node* m1 = produced_by(qk, "MatMul");
    if (!m1 || !uses.single_use(qk) || m1->num_inputs() != 2) return false;
    ir::Value* kt = strip_scale(uses, m1->inputs[1], &scale, covered);
    ir::Node* tr = produced_by(kt, "Transpose");
    if (tr && (!uses.single_use(kt) || !tr->has_input(0))) tr = nullptr;
    ir::Value* q = strip_scale(uses, m1->inputs[0], &scale, covered);
    const size_t r = s->shape->size();
    auto known = [&](const ir::Value* x) { return x->shape && x->shape->size() == r && x->dtype == s->dtype; };
    if (!known(q) || !known(kt) || !known(v) || (tr && !known(tr->inputs[0]))) return false;
    // Batch dims of Q, K (= K^T's), V equal; Q's D = K^T's D; K^T's T = V's T.
    const Shape &qs = *q->shape, &ks = *kt->shape, &vs = *v->shape;
    bool ok = dims_equal(qs[r - 1], ks[r - 2]) && dims_equal(ks[r - 1], vs[r - 2]);
    for (size_t i = 0; i + 2 < r; ++i) ok = ok && dims_equal(qs[i], ks[i]) && dims_equal(qs[i], vs[i]);
    if (!ok) return false;
    std::vector<int64_t> perm;
    if (tr) {
      perm = tr->attr_ints("perm");
      if (perm.empty())
        for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
      if (perm.size() != r) return false;
    } else {
      for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(i));
    }
    std::swap(perm[r - 1], perm[r - 2]);  // the perm that gives K [..., T, D]
    bool identity = true;
    for (size_t i = 0; i < r; ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    ir::Value* k = tr ? tr->inputs[0] : nullptr;
    if (tr && identity) {
      covered.push_back(tr);
    } else if (tr) {
      // The Transpose now yields K.
      k = g.add_value(g.fresh_name(tr->name + "_k"));
      k->onnx_name.clear();
      k->dtype = kt->dtype;
      tr->attrs["perm"] = make_ints(perm);
      tr->outputs[0] = k;
      k->producer = tr;
      k->producer_output = 0;
      kt->producer = nullptr;
    } else if (const Tensor* c = constant_of(kt); c && c->is_plain()) {
      // Constant K^T: store K.
      const std::vector<int64_t>& d = c->dims();
      const int64_t rows = d[r - 2], cols = d[r - 1], mat = rows * cols;
      std::vector<int64_t> kd = d;
      std::swap(kd[r - 1], kd[r - 2]);
      Tensor kt_d = c->cast(DType::kFloat64), kk(DType::kFloat64, kd);
      for (int64_t b = 0; mat && b < c->numel() / mat; ++b)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) kk.data<double>()[b * mat + j * rows + i] = kt_d.data<double>()[b * mat + i * cols + j];
      k = add_constant(g, kt->name + "_k", kk.cast(c->dtype()));
    } else {
      // K^T computed some other way: a new Transpose of its last two axes gives K, placed before the
      // first MatMul (where K^T exists); it stands for no ONNX node of its own.
      k = g.add_value(g.fresh_name(kt->name + "_k"));
      k->onnx_name.clear();
      k->dtype = kt->dtype;
      auto t = std::make_unique<ir::Node>();
      t->op_type = "Transpose";
      t->opset = m1->opset;
      t->name = m1->name + "_k";
      t->provenance = m1->provenance;
      t->inputs = {kt};
      t->outputs = {k};
      t->attrs["perm"] = make_ints(perm);
      k->producer = t.get();
      k->producer_output = 0;
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (g.nodes[i].get() == m1) {
          g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(t));
          break;
        }
    }
    covered.push_back(m1);
    covered.push_back(sm);
    covered.push_back(&m2);
    std::vector<ir::Value*> ins = {q, k, v};
    if (mask) ins.push_back(mask);
    ir::Node* fa = replace_with(g, covered, "FusedAttention", "com.ferry", 1, ins, m2.outputs[0]);
    fa->attrs["scale"] = make_float(static_cast<float>(scale));
    if (nan_to_zero) fa->attrs["nan_to_zero"] = make_int(1);
    return true;
  });
}

}  // namespace ferry::passes
