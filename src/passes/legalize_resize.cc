// Resize whose scales or sizes are computed (Shape -> Gather -> Mul ... chains from torch's
// interpolate) -> the same Resize with that input as a constant. Devices want them constant (CANN:
// "scales/sizes must be constants, run onnx-simplifier"); once the input shapes are fixed the chain
// folds. The scales themselves are kept (not replaced by the output size): with scales, coordinates
// map through the scale, so swapping in sizes would change a non-integral resize.
#include "ops/op.h"
#include "passes/legalize.h"

namespace ferry::passes {

namespace {
// Input slots of a Resize at its opset that must be constant: scales (1) at opset 10; roi, scales,
// sizes (1..3) from opset 11.
std::vector<int> computed_inputs(const ir::Node& n) {
  std::vector<int> out;
  for (int i = 1; i < n.num_inputs(); ++i)
    if (n.has_input(i) && !n.inputs[i]->is_constant()) out.push_back(i);
  return out;
}
}  // namespace

LegalizeRule rule_resize() {
  return {"legalize_resize", "Resize", {"Resize"},
          [](const ir::Node& n) {
            if (!n.has_input(0) || computed_inputs(n).empty()) return false;
            ir::Node& m = const_cast<ir::Node&>(n);  // InferContext reads only; it takes a mutable node
            ops::InferContext ctx(m);
            for (int i : computed_inputs(n))
              if (!ctx.input_constant(i)) return false;
            return true;
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ops::InferContext ctx(*n);
            std::vector<std::pair<int, Tensor>> folded;
            for (int i : computed_inputs(*n)) {
              const Tensor* t = ctx.input_constant(i);
              if (!t) return false;
              folded.push_back({i, *t});
            }
            std::vector<ir::Value*> inputs = n->inputs;
            for (auto& [i, t] : folded) inputs[i] = add_constant(g, n->name + "/folded", std::move(t));
            ir::Value* y = emit(g, *n, "Resize", inputs, n->attrs);
            return finish_rewrite(g, n, y);
          }};
}


}  // namespace ferry::passes
