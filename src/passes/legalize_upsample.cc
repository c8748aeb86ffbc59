// Upsample (opset 7-9, deprecated; not in the CANN ONNX list) -> Resize at opset 10, whose semantics
// are Upsample's exactly (asymmetric coordinates, nearest rounds down; scales as an input). Opset 7's
// scales attribute becomes a constant input.
#include "passes/legalize.h"

namespace ferry::passes {

LegalizeRule rule_upsample() {
  return {"legalize_upsample", "Upsample", {"Resize"},
          [](const ir::Node& n) {
            std::string mode = n.attr_string("mode", "nearest");
            return n.has_input(0) && (mode == "nearest" || mode == "linear") && (n.has_input(1) || n.has_attr("scales"));
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* scales = n->has_input(1) ? n->inputs[1] : nullptr;
            if (!scales) {
              std::vector<float> s = n->attr_floats("scales");
              scales = add_constant(g, n->name + "/scales", Tensor::from_vector(s, {static_cast<int64_t>(s.size())}));
            }
            ir::Value* y = emit(g, *n, "Resize", {n->inputs[0], scales}, {{"mode", make_string(n->attr_string("mode", "nearest"))}});
            y->producer->opset = 10;
            return finish_rewrite(g, n, y);
          }};
}


}  // namespace ferry::passes
