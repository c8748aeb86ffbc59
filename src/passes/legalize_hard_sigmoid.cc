// HardSigmoid(x) = max(0, min(1, alpha * x + beta)) as Mul, Add, Min, Max (alpha 0.2, beta 0.5 by
// default): elementwise ops every target has.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_hard_sigmoid() {
  return {"legalize_hard_sigmoid", "HardSigmoid", {"Mul", "Add", "Min", "Max"},
          [](const ir::Node& n) { return n.has_input(0); },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            ir::Value* ax = emit(g, *n, "Mul", {x, scalar_like(g, x, n->attr_float("alpha", 0.2f), n->name + "/alpha")});
            ir::Value* y = emit(g, *n, "Add", {ax, scalar_like(g, x, n->attr_float("beta", 0.5f), n->name + "/beta")});
            ir::Value* lo = emit(g, *n, "Min", {y, scalar_like(g, x, 1.0, n->name + "/one")});
            return finish_rewrite(g, n, emit(g, *n, "Max", {lo, scalar_like(g, x, 0.0, n->name + "/zero")}));
          }};
}


}  // namespace ferry::passes
