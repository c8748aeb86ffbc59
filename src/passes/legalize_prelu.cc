// PRelu(x, slope) = relu(x) + slope * min(x, 0), written with Relu/Neg so every broadcast form of the
// slope works ([C,1,1] as torch exports it, [C] against the last axis, a scalar): devices restrict
// PRelu's slope to one per channel (and CANN's kernel to [C] against axis 1), plain Mul broadcasts any.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_prelu() {
  return {"legalize_prelu", "PRelu", {"Relu", "Neg", "Mul", "Sub"},
          [](const ir::Node& n) { return n.has_input(0) && n.has_input(1); },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            ir::Value* neg = emit(g, *n, "Relu", {emit(g, *n, "Neg", {x})});  // -min(x, 0)
            ir::Value* scaled = emit(g, *n, "Mul", {n->inputs[1], neg});
            return finish_rewrite(g, n, emit(g, *n, "Sub", {emit(g, *n, "Relu", {x}), scaled}));
          }};
}


}  // namespace ferry::passes
