// Mish(x) = x * tanh(softplus(x)) (opset 18; not in the CANN ONNX list). Softplus is on most targets;
// where it is not, legalize_softplus rewrites it in the next round.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_mish() {
  return {"legalize_mish", "Mish", {"Softplus", "Tanh", "Mul"},
          [](const ir::Node& n) { return n.has_input(0); },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            ir::Value* t = emit(g, *n, "Tanh", {emit(g, *n, "Softplus", {x})});
            return finish_rewrite(g, n, emit(g, *n, "Mul", {x, t}));
          }};
}


}  // namespace ferry::passes
