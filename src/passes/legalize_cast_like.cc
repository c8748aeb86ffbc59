// CastLike(x, like) (opset 15; not in the CANN ONNX list) = Cast(x, to = like's element type), known
// once types are inferred.
#include "core/onnx_dtype.h"
#include "passes/legalize.h"

namespace ferry::passes {

namespace {
// The ONNX code of a dtype: the inverse of dtype_from_onnx over the codes ferry has.
int onnx_dtype_code(DType dt) {
  for (int code = 1; code <= 16; ++code) {
    auto d = dtype_from_onnx(code);
    if (d.ok() && *d == dt) return code;
  }
  return 0;
}
}  // namespace

LegalizeRule rule_cast_like() {
  return {"legalize_cast_like", "CastLike", {"Cast"},
          [](const ir::Node& n) {
            return n.has_input(0) && n.has_input(1) && n.inputs[1]->dtype != DType::kUndefined &&
                   onnx_dtype_code(n.inputs[1]->dtype) > 0;
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            int code = onnx_dtype_code(n->inputs[1]->dtype);
            return finish_rewrite(g, n, emit(g, *n, "Cast", {n->inputs[0]}, {{"to", make_int(code)}}));
          }};
}


}  // namespace ferry::passes
