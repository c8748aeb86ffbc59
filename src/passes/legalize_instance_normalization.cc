// InstanceNormalization(x [N, C, D...], scale [C], bias [C]): normalize over the spatial axes, then
// per-channel scale and bias reshaped to [C, 1, ...] to broadcast against axis 1.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_instance_normalization() {
  return {"legalize_instance_normalization", "InstanceNormalization",
          {"ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div", "Reshape"},
          [](const ir::Node& n) {
            return n.num_inputs() == 3 && n.has_input(0) && n.has_input(1) && n.has_input(2) && n.inputs[0]->shape &&
                   n.inputs[0]->shape->size() >= 3;
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            const int rank = static_cast<int>(x->shape->size());
            std::vector<int64_t> axes;
            for (int a = 2; a < rank; ++a) axes.push_back(a);
            ir::Value* y = emit_normalize(g, *n, x, axes, n->attr_float("epsilon", 1e-5f));
            y = emit(g, *n, "Mul", {y, emit_channel_param(g, *n, n->inputs[1], rank - 2)});
            return finish_rewrite(g, n, emit(g, *n, "Add", {y, emit_channel_param(g, *n, n->inputs[2], rank - 2)}));
          }};
}


}  // namespace ferry::passes
