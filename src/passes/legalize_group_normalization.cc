// GroupNormalization (opset 18/21; not in the CANN ONNX list): x [N, C, D...] reshaped to [N, G, -1],
// normalized over the last axis, reshaped back, then scale and bias. Opset 18 has one scale per group
// and opset 21 one per channel; like the reference kernel, a scale whose length matches the other
// convention is taken in that one (exporters disagree about opset 18). Needs C and the rank known;
// the shape back is a constant when x's shape is static (devices want Reshape's shape constant), else
// Shape(x).
#include "passes/legalize.h"

namespace ferry::passes {

namespace {
std::optional<int64_t> length_of(const ir::Value* v) {
  auto s = static_shape(v);
  if (!s || s->size() != 1) return std::nullopt;
  return (*s)[0];
}
}  // namespace

LegalizeRule rule_group_normalization() {
  return {"legalize_group_normalization", "GroupNormalization",
          {"Reshape", "ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div", "Shape"},
          [](const ir::Node& n) {
            if (n.num_inputs() != 3 || !n.has_input(0) || !n.has_input(1) || !n.has_input(2) || !n.inputs[0]->shape)
              return false;
            const Shape& s = *n.inputs[0]->shape;
            int64_t g = n.attr_int("num_groups", 0);
            if (s.size() < 3 || !s[1].is_static() || g <= 0 || s[1].value % g != 0) return false;
            auto ls = length_of(n.inputs[1]), lb = length_of(n.inputs[2]);
            return ls && lb && *ls == *lb && (*ls == g || *ls == s[1].value);
          },
          [](ir::Graph& g, ir::Node* n) -> Result<bool> {
            ir::Value* x = n->inputs[0];
            const Shape& s = *x->shape;
            const int rank = static_cast<int>(s.size());
            const int64_t groups = n->attr_int("num_groups", 1), c = s[1].value;
            const int64_t len = *length_of(n->inputs[1]);
            // Which convention: per channel when the length says so unambiguously or opset 21 says so.
            const bool per_channel = len == c && (len != groups || n->opset >= 21);
            ir::Value* grouped = emit(g, *n, "Reshape", {x, int64_constant(g, {0, groups, -1}, n->name + "/grouped")});
            ir::Value* y = emit_normalize(g, *n, grouped, {2}, n->attr_float("epsilon", 1e-5f));
            if (!per_channel) {
              y = emit(g, *n, "Mul", {y, emit_channel_param(g, *n, n->inputs[1], 1)});
              y = emit(g, *n, "Add", {y, emit_channel_param(g, *n, n->inputs[2], 1)});
            }
            ir::Value* back;
            if (auto dims = static_shape(x)) back = int64_constant(g, *dims, n->name + "/shape");
            else back = emit(g, *n, "Shape", {x});
            y = emit(g, *n, "Reshape", {y, back});
            if (per_channel) {
              y = emit(g, *n, "Mul", {y, emit_channel_param(g, *n, n->inputs[1], rank - 2)});
              y = emit(g, *n, "Add", {y, emit_channel_param(g, *n, n->inputs[2], rank - 2)});
            }
            return finish_rewrite(g, n, y);
          }};
}


}  // namespace ferry::passes
