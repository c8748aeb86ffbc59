// Removes nodes that pass their input through unchanged: Identity, Dropout in inference, Cast to the
// same type, Concat of a single input, and Reshape/Flatten/Squeeze/Unsqueeze/Expand/Slice/Pad/Transpose/Mul 1/Add 0/... when
// attributes and shapes prove the output equals the input. A node whose output is a graph output is
// only removed when its producer-side value can take over the output's name. The removed node's
// provenance moves to the producer of its input.
#include <algorithm>

#include "passes/passes.h"

namespace ferry::passes {

namespace {
bool constant_all(const ir::Value* v, auto pred) {
  const Tensor* t = constant_of(v);
  if (!t || !t->is_plain()) return false;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (!pred(t->as_double(i))) return false;
  return true;
}

bool same_static_type(const ir::Value* a, const ir::Value* b) {
  auto sa = static_shape(a), sb = static_shape(b);
  return sa && sb && *sa == *sb && a->dtype == b->dtype && a->dtype != DType::kUndefined;
}

// The input that the node passes through unchanged, or null.
ir::Value* passthrough(const ir::Node& n, const Uses& uses) {
  if (!n.domain.empty() || n.subgraphs().size() || !n.has_input(0) || n.num_outputs() < 1 || !n.outputs[0]) return nullptr;
  ir::Value* x = n.inputs[0];
  ir::Value* y = n.outputs[0];
  for (int i = 1; i < n.num_outputs(); ++i)
    if (n.outputs[i] && uses.use_count(n.outputs[i]) > 0) return nullptr;  // e.g. Dropout's mask is read
  const std::string& op = n.op_type;
  if (op == "Identity") return x->kind == y->kind || y->kind == ir::ValueKind::kTensor ? x : nullptr;
  if (x->kind != ir::ValueKind::kTensor) return nullptr;
  if (op == "Dropout") {
    // opset 12+: training_mode (input 2) absent or constant false; before, Dropout is inference-only.
    // A constant ratio of 0 keeps every element and scales by 1 / (1 - 0) in training mode too:
    // torchvision's Swin exports its attention dropout with training_mode true and ratio 0.
    const bool inference = !n.has_input(2) || constant_all(n.inputs[2], [](double v) { return v == 0; });
    const bool keeps_all = n.opset >= 12 && n.has_input(1) && constant_all(n.inputs[1], [](double v) { return v == 0; });
    return inference || keeps_all ? x : nullptr;
  }
  if (op == "Cast") return x->dtype != DType::kUndefined && n.attr_int("to", -1) >= 0 && x->dtype == y->dtype ? x : nullptr;
  if (!same_static_type(x, y)) return nullptr;
  // A Concat of one tensor (DenseNet's first layer of each block concatenates a one-element list).
  if (op == "Concat") return n.num_inputs() == 1 ? x : nullptr;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand") return x;
  if (op == "Transpose") {
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm.empty()) return x->shape->size() <= 1 ? x : nullptr;
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return nullptr;
    return x;
  }
  if (op == "Slice") {
    // Same shape and every step positive: the slice starts at 0 and takes everything.
    if (n.opset < 10) return x;
    if (n.has_input(4) && !constant_all(n.inputs[4], [](double v) { return v > 0; })) return nullptr;
    return x;
  }
  if (op == "Pad") {
    if (n.opset < 11) {
      for (int64_t p : n.attr_ints("pads")) if (p != 0) return nullptr;
      return x;
    }
    return n.has_input(1) && constant_all(n.inputs[1], [](double v) { return v == 0; }) ? x : nullptr;
  }
  if (n.num_inputs() == 2 && n.has_input(1)) {
    const ir::Value* c = n.inputs[1];
    if ((op == "Mul" || op == "Div") && constant_all(c, [](double v) { return v == 1; })) return x;
    if ((op == "Add" || op == "Sub") && constant_all(c, [](double v) { return v == 0; })) return x;
    if (op == "Mul" && constant_all(n.inputs[0], [](double v) { return v == 1; }) && same_static_type(n.inputs[1], y))
      return n.inputs[1];
    if (op == "Add" && constant_all(n.inputs[0], [](double v) { return v == 0; }) && same_static_type(n.inputs[1], y))
      return n.inputs[1];
  }
  return nullptr;
}
}  // namespace

Result<int> eliminate_identity(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& node_ref, const Uses& uses) -> Result<bool> {
    ir::Node* node = &node_ref;
    ir::Value* in = passthrough(*node, uses);
    if (!in || in == node->outputs[0]) return false;
    if (!replace_value(g, node->outputs[0], in)) return false;
    // The producer of the passed-through value now also stands for the removed node (provenance is
    // kept, after the producer's own names, which is topological order).
    if (in->producer && in->graph == &g)
      for (const auto& p : node->provenance)
        if (std::find(in->producer->provenance.begin(), in->producer->provenance.end(), p) ==
            in->producer->provenance.end())
          in->producer->provenance.push_back(p);
    remove_node(g, node);
    return true;
  });
}

}  // namespace ferry::passes
