// ReduceLogSumExp(x) = log(ReduceSum(exp(x - m))) + m with m = ReduceMax(x): the max shift keeps exp
// from overflowing (exp(89) is inf in fp32, exp(12) in fp16). m is computed twice, with keepdims 1
// for the shift and with the node's keepdims for the result.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_reduce_log_sum_exp() {
  return {"legalize_reduce_log_sum_exp", "ReduceLogSumExp", {"ReduceMax", "Sub", "Exp", "ReduceSum", "Log", "Add"},
          [](const ir::Node& n) {
            return n.has_input(0) && reduce_axes_of(n).has_value() && n.attr_int("noop_with_empty_axes", 0) == 0;
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            std::vector<int64_t> axes = *reduce_axes_of(*n);
            int64_t keep = n->attr_int("keepdims", 1);
            ir::Value* m1 = emit_reduce(g, *n, "ReduceMax", x, axes, 1);
            ir::Value* e = emit(g, *n, "Exp", {emit(g, *n, "Sub", {x, m1})});
            ir::Value* l = emit(g, *n, "Log", {emit_reduce(g, *n, "ReduceSum", e, axes, keep)});
            ir::Value* m = keep ? m1 : emit_reduce(g, *n, "ReduceMax", x, axes, 0);
            return finish_rewrite(g, n, emit(g, *n, "Add", {l, m}));
          }};
}


}  // namespace ferry::passes
