// ReduceL2(x) = sqrt(ReduceSum(x * x)) over the same axes and keepdims.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_reduce_l2() {
  return {"legalize_reduce_l2", "ReduceL2", {"Mul", "ReduceSum", "Sqrt"},
          [](const ir::Node& n) {
            return n.has_input(0) && reduce_axes_of(n).has_value() && n.attr_int("noop_with_empty_axes", 0) == 0;
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            ir::Value* sq = emit(g, *n, "Mul", {x, x});
            ir::Value* s = emit_reduce(g, *n, "ReduceSum", sq, *reduce_axes_of(*n), n->attr_int("keepdims", 1));
            return finish_rewrite(g, n, emit(g, *n, "Sqrt", {s}));
          }};
}


}  // namespace ferry::passes
