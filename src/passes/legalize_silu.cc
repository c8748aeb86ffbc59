// SiLU, ONNX's Swish (opset 24): x * sigmoid(alpha * x), alpha 1 by default (torch's SiLU).
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_silu() {
  return {"legalize_silu", "Swish", {"Mul", "Sigmoid"},
          [](const ir::Node& n) { return n.has_input(0); },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            float alpha = n->attr_float("alpha", 1.0f);
            ir::Value* ax = alpha == 1.0f ? x : emit(g, *n, "Mul", {x, scalar_like(g, x, alpha, n->name + "/alpha")});
            return finish_rewrite(g, n, emit(g, *n, "Mul", {x, emit(g, *n, "Sigmoid", {ax})}));
          }};
}


}  // namespace ferry::passes
