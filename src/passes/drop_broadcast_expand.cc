// An Expand read only by an elementwise binary op whose other operand already has the Expand's output
// shape goes: the op broadcasts the un-expanded tensor by itself (numpy broadcasting gives the same
// shape, since Expand is that broadcast). torch exports F.normalize as ReduceL2 -> Clip -> Expand ->
// Div; swin_v2's cosine attention ran 24 such Expands as reference copies, 16% of its time.
#include <algorithm>

#include "passes/passes.h"

namespace ferry::passes {

namespace {

bool broadcasting_binary(const ir::Node& n) {
  static const char* const kOps[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater",
                                     "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod", "PRelu"};
  if (!n.domain.empty() || n.num_inputs() != 2 || n.opset < 7) return false;
  for (const char* op : kOps)
    if (n.op_type == op) return n.op_type != "PRelu" || n.opset >= 9;
  return false;
}

}  // namespace

Result<int> drop_broadcast_expand(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& expand, const Uses& uses) -> Result<bool> {
    if (expand.op_type != "Expand" || !expand.domain.empty() || !expand.has_input(0) || !expand.has_output(0))
      return false;
    ir::Value* e = expand.outputs[0];
    if (!uses.single_use(e) || uses.users(e).size() != 1) return false;
    ir::Node* op = uses.users(e)[0];
    if (!broadcasting_binary(*op) || !op->has_input(0) || !op->has_input(1)) return false;
    const int slot = op->inputs[0] == e ? 0 : 1;
    if (op->inputs[slot] != e || op->inputs[1 - slot] == e) return false;
    // PRelu broadcasts its slope (input 1) only.
    if (op->op_type == "PRelu" && slot != 1) return false;
    const auto es = static_shape(e), os = static_shape(op->inputs[1 - slot]);
    const auto xs = static_shape(expand.inputs[0]);
    if (!es || !os || !xs || *es != *os || xs->size() > es->size()) return false;
    op->inputs[slot] = expand.inputs[0];
    for (const std::string& p : expand.provenance)
      if (std::find(op->provenance.begin(), op->provenance.end(), p) == op->provenance.end())
        op->provenance.insert(op->provenance.begin(), p);
    remove_node(g, &expand);
    return true;
  });
}

}  // namespace ferry::passes
