// HardSwish(x) = x * HardSigmoid(x) with alpha 1/6, beta 0.5 (ONNX's definition). A target without
// HardSigmoid gets that legalized in the next round.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_hard_swish() {
  return {"legalize_hard_swish", "HardSwish", {"HardSigmoid", "Mul"},
          [](const ir::Node& n) { return n.has_input(0); },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            ir::Value* hs = emit(g, *n, "HardSigmoid", {x}, {{"alpha", make_float(1.0f / 6)}, {"beta", make_float(0.5f)}});
            hs->producer->opset = std::max(n->opset, 6);
            return finish_rewrite(g, n, emit(g, *n, "Mul", {x, hs}));
          }};
}


}  // namespace ferry::passes
