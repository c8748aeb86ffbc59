// Layout no-ops and chains: Transpose(Transpose(x)) becomes one Transpose (or nothing when the perms
// cancel); Reshape(Reshape(x)) becomes one Reshape when the outer shape has no 0 (copy-a-dim) entries;
// a Transpose that only moves size-1 dims becomes a Reshape (a metadata change for every backend).
// Constant Squeeze/Unsqueeze/Transpose/Reshape are fold_constants' job.
#include "passes/passes.h"

namespace ferry::passes {

namespace {
std::vector<int64_t> perm_of(const ir::Node& t, size_t rank) {
  std::vector<int64_t> p = t.attr_ints("perm");
  if (p.empty())
    for (size_t i = 0; i < rank; ++i) p.push_back(static_cast<int64_t>(rank - 1 - i));
  return p;
}

bool is_identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool valid_perm(const std::vector<int64_t>& p, size_t rank) {
  if (p.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t v : p) {
    if (v < 0 || v >= static_cast<int64_t>(rank) || seen[v]) return false;
    seen[v] = true;
  }
  return true;
}

ir::Node* op_node(const ir::Value* v, const char* op) {
  return v && v->producer && v->producer->op_type == op && v->producer->domain.empty() && v->producer->num_outputs() == 1
             ? v->producer
             : nullptr;
}

// Tries one rewrite at n; true when the graph changed.
bool simplify_at(ir::Graph& g, const Uses& uses, ir::Node& n) {
  if (!n.domain.empty() || n.num_outputs() != 1 || !n.outputs[0] || !n.has_input(0)) return false;
  ir::Value* x = n.inputs[0];
  ir::Value* y = n.outputs[0];
  if (n.op_type == "Transpose" && x->shape) {
    const size_t r = x->shape->size();
    std::vector<int64_t> p2 = perm_of(n, r);
    if (!valid_perm(p2, r)) return false;
    if (ir::Node* inner = op_node(x, "Transpose"); inner && uses.single_use(x) && inner->has_input(0) &&
                                                   inner->inputs[0]->shape && inner->inputs[0]->shape->size() == r) {
      std::vector<int64_t> p1 = perm_of(*inner, r);
      if (!valid_perm(p1, r)) return false;
      std::vector<int64_t> p(r);
      for (size_t i = 0; i < r; ++i) p[i] = p1[p2[i]];
      ir::Value* src = inner->inputs[0];
      if (is_identity(p)) {
        if (!replace_value(g, y, src)) return false;
        remove_nodes(g, {&n, inner});
        return true;
      }
      const int opset = n.opset;
      replace_with(g, {inner, &n}, "Transpose", "", opset, {src}, y)->attrs["perm"] = make_ints(p);
      return true;
    }
    // Only size-1 dims move: the non-1 dims keep their order, so the data order is unchanged.
    auto xd = static_shape(x);
    auto yd = static_shape(y);
    if (xd && yd && !is_identity(p2)) {
      int64_t last = -1;
      bool order_kept = true;
      for (int64_t src_axis : p2) {
        if ((*xd)[src_axis] == 1) continue;
        order_kept = order_kept && src_axis > last;
        last = src_axis;
      }
      if (order_kept) {
        ir::Value* shape = add_constant(g, n.name + "_shape", Tensor::from_vector(*yd));
        const int opset = std::max(n.opset, 5);
        replace_with(g, {&n}, "Reshape", "", opset, {x, shape}, y);
        return true;
      }
    }
    return false;
  }
  if (n.op_type == "Reshape" && n.num_inputs() == 2 && n.attr_int("allowzero", 0) == 0) {
    ir::Node* inner = op_node(x, "Reshape");
    const Tensor* s2 = constant_of(n.inputs[1]);
    if (!inner || !uses.single_use(x) || !s2 || !inner->has_input(0) || inner->attr_int("allowzero", 0) != 0) return false;
    for (int64_t d : s2->to_int64_vector())
      if (d == 0) return false;  // 0 copies a dim of the intermediate, which the merged Reshape would not see
    const int opset = n.opset;
    replace_with(g, {inner, &n}, "Reshape", "", opset, {inner->inputs[0], n.inputs[1]}, y);
    return true;
  }
  return false;
}
}  // namespace

Result<int> simplify_transpose_reshape(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& n, const Uses& uses) -> Result<bool> { return simplify_at(g, uses, n); });
}

}  // namespace ferry::passes
