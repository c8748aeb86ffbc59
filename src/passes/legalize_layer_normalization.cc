// LayerNormalization (opset 17) over axes [axis, rank): ReduceMean/Sub/Mul/Sqrt/Div, then * scale + bias.
// Only when the optional Mean and InvStdDev outputs are absent (inference exports never have them).
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_layer_normalization() {
  return {"legalize_layer_normalization", "LayerNormalization", {"ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div"},
          [](const ir::Node& n) {
            return n.has_input(0) && n.has_input(1) && !n.has_output(1) && !n.has_output(2) && n.inputs[0]->shape;
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            const int64_t rank = static_cast<int64_t>(x->shape->size());
            int64_t axis = n->attr_int("axis", -1);
            if (axis < 0) axis += rank;
            if (axis < 0 || axis >= rank) return false;
            std::vector<int64_t> axes;
            for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
            ir::Value* y = emit_normalize(g, *n, x, axes, n->attr_float("epsilon", 1e-5f));
            y = emit(g, *n, "Mul", {y, n->inputs[1]});
            if (n->has_input(2)) y = emit(g, *n, "Add", {y, n->inputs[2]});
            return finish_rewrite(g, n, y);
          }};
}


}  // namespace ferry::passes
