// Gelu (opset 20; not in the CANN ONNX list): approximate "none" is 0.5 x (1 + erf(x / sqrt 2)),
// "tanh" is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the cube as two Muls (Pow's fp16 path
// is a known precision trap on NPUs).
#include <cmath>

#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_gelu() {
  return {"legalize_gelu", "Gelu", {"Mul", "Add", "Erf", "Tanh"},
          [](const ir::Node& n) {
            std::string a = n.attr_string("approximate", "none");
            return n.has_input(0) && (a == "none" || a == "tanh");
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            const std::string& b = n->name;
            ir::Value* inner;
            if (n->attr_string("approximate", "none") == "tanh") {
              ir::Value* x3 = emit(g, *n, "Mul", {emit(g, *n, "Mul", {x, x}), x});
              ir::Value* s = emit(g, *n, "Add", {x, emit(g, *n, "Mul", {x3, scalar_like(g, x, 0.044715, b + "/c")})});
              inner = emit(g, *n, "Tanh", {emit(g, *n, "Mul", {s, scalar_like(g, x, std::sqrt(2.0 / M_PI), b + "/k")})});
            } else {
              inner = emit(g, *n, "Erf", {emit(g, *n, "Mul", {x, scalar_like(g, x, M_SQRT1_2, b + "/rsqrt2")})});
            }
            ir::Value* one = emit(g, *n, "Add", {inner, scalar_like(g, x, 1.0, b + "/one")});
            ir::Value* hx = emit(g, *n, "Mul", {x, scalar_like(g, x, 0.5, b + "/half")});
            return finish_rewrite(g, n, emit(g, *n, "Mul", {hx, one}));
          }};
}


}  // namespace ferry::passes
