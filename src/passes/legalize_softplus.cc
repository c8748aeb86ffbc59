// Softplus(x) = log(1 + exp(x)), written in the stable form relu(x) + log(1 + exp(-|x|)): the naive
// one overflows exp for x > 88 in fp32 (and x > 11 in fp16, the emulated Ascend default).
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_softplus() {
  return {"legalize_softplus", "Softplus", {"Relu", "Abs", "Neg", "Exp", "Add", "Log"},
          [](const ir::Node& n) { return n.has_input(0); },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            ir::Value* e = emit(g, *n, "Exp", {emit(g, *n, "Neg", {emit(g, *n, "Abs", {x})})});
            ir::Value* l = emit(g, *n, "Log", {emit(g, *n, "Add", {e, scalar_like(g, x, 1.0, n->name + "/one")})});
            return finish_rewrite(g, n, emit(g, *n, "Add", {emit(g, *n, "Relu", {x}), l}));
          }};
}


}  // namespace ferry::passes
