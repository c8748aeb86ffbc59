// The legalization rules in one list, the driver that applies them where a target wants it, and the
// builder helpers the rule files share. Emitted nodes take the rewritten node's opset (so reductions
// follow that opset's axes convention) and its provenance; the final value takes over the original
// output's name and onnx_name, so layerwise compare still finds the tensor.
#include <algorithm>

#include "ops/op.h"
#include "passes/legalize.h"

namespace ferry::passes {

const std::vector<LegalizeRule>& legalize_rules() {
#define FERRY_MAKE_LEGALIZE_RULE(stem) rule_##stem(),
  static const std::vector<LegalizeRule> k = {FERRY_LEGALIZE_RULES(FERRY_MAKE_LEGALIZE_RULE)};
#undef FERRY_MAKE_LEGALIZE_RULE
  return k;
}

const LegalizeRule* legalize_rule_for(const ir::Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  for (const LegalizeRule& r : legalize_rules())
    if (n.op_type == r.op_type && r.applies(n)) return &r;
  return nullptr;
}

ir::Value* emit(ir::Graph& g, const ir::Node& origin, const std::string& op, std::vector<ir::Value*> inputs,
                std::map<std::string, ir::Attribute> attrs) {
  ir::Node* n = g.add_node(op, origin.name + "/" + op);
  n->opset = origin.opset;
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
  n->provenance = origin.provenance;
  ir::Value* out = g.add_value(g.fresh_name(origin.name + "/" + op));
  out->producer = n;
  out->producer_output = 0;
  n->outputs = {out};
  // Place it just before the origin: its inputs are all available there, and its users come later.
  std::unique_ptr<ir::Node> owned = std::move(g.nodes.back());
  g.nodes.pop_back();
  auto pos = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const auto& p) { return p.get() == &origin; });
  g.nodes.insert(pos, std::move(owned));
  return out;
}

ir::Value* scalar_like(ir::Graph& g, const ir::Value* x, double v, const std::string& base) {
  DType dt = x && x->dtype != DType::kUndefined ? x->dtype : DType::kFloat32;
  Tensor t(dt, {});
  switch (dt) {
    case DType::kFloat16: t.data<float16>()[0] = float16(v); break;
    case DType::kBFloat16: t.data<bfloat16>()[0] = bfloat16(v); break;
    case DType::kFloat64: t.data<double>()[0] = v; break;
    default: t = Tensor(DType::kFloat32, {}), t.data<float>()[0] = static_cast<float>(v); break;
  }
  return add_constant(g, base, std::move(t));
}

ir::Value* int64_constant(ir::Graph& g, std::vector<int64_t> v, const std::string& base) {
  return add_constant(g, base, Tensor::from_vector(v, {static_cast<int64_t>(v.size())}));
}

ir::Value* emit_reduce(ir::Graph& g, const ir::Node& origin, const std::string& op, ir::Value* x,
                       const std::vector<int64_t>& axes, int64_t keepdims) {
  const int input_since = op == "ReduceSum" ? 13 : 18;
  std::map<std::string, ir::Attribute> attrs = {{"keepdims", make_int(keepdims)}};
  std::vector<ir::Value*> inputs = {x};
  if (origin.opset >= input_since) {
    if (!axes.empty()) inputs.push_back(int64_constant(g, axes, origin.name + "/axes"));
  } else if (!axes.empty()) {
    attrs["axes"] = make_ints(axes);
  }
  return emit(g, origin, op, inputs, attrs);
}

std::optional<std::vector<int64_t>> reduce_axes_of(const ir::Node& n) {
  if (n.has_attr("axes")) return n.attr_ints("axes");
  if (!n.has_input(1)) return std::vector<int64_t>{};
  const Tensor* t = constant_of(n.inputs[1]);
  if (!t) return std::nullopt;
  return t->to_int64_vector();
}

ir::Value* emit_normalize(ir::Graph& g, const ir::Node& origin, ir::Value* x, const std::vector<int64_t>& axes,
                          double eps) {
  ir::Value* d = emit(g, origin, "Sub", {x, emit_reduce(g, origin, "ReduceMean", x, axes, 1)});
  ir::Value* var = emit_reduce(g, origin, "ReduceMean", emit(g, origin, "Mul", {d, d}), axes, 1);
  ir::Value* sd = emit(g, origin, "Sqrt", {emit(g, origin, "Add", {var, scalar_like(g, x, eps, origin.name + "/eps")})});
  return emit(g, origin, "Div", {d, sd});
}

ir::Value* emit_channel_param(ir::Graph& g, const ir::Node& origin, ir::Value* p, int trailing) {
  std::vector<int64_t> dims = {-1};
  for (int i = 0; i < trailing; ++i) dims.push_back(1);
  if (const Tensor* t = constant_of(p)) {
    dims[0] = t->numel();
    auto r = t->reshaped(dims);
    if (r.ok()) return add_constant(g, origin.name + "/param", *r);
  }
  return emit(g, origin, "Reshape", {p, int64_constant(g, dims, origin.name + "/param_shape")});
}

bool finish_rewrite(ir::Graph& g, ir::Node* origin, ir::Value* last) {
  ir::Value* old = origin->outputs[0];
  const bool old_is_output = std::find(g.outputs.begin(), g.outputs.end(), old) != g.outputs.end();
  if (!replace_value(g, old, last)) return false;
  if (!old_is_output) {
    // replace_value renames only for graph outputs; do the same here so the tensor keeps its name.
    std::string keep = old->name, keep_onnx = old->onnx_name;
    old->name = g.fresh_name(keep + "_legalized");
    last->name = keep;
    last->onnx_name = keep_onnx;
    g.reindex();
  }
  remove_node(g, origin);
  return true;
}

Result<int> apply_rule_everywhere(ir::Graph& g, const char* rule_name) {
  const LegalizeRule* rule = nullptr;
  for (const LegalizeRule& r : legalize_rules())
    if (std::string(r.name) == rule_name) rule = &r;
  if (!rule) return Status::internal(std::string("no legalize rule ") + rule_name);
  std::vector<ir::Node*> todo;
  for (const auto& n : g.nodes)
    if (n->op_type == rule->op_type && (n->domain.empty() || n->domain == "ai.onnx") && rule->applies(*n))
      todo.push_back(n.get());
  int changes = 0;
  for (ir::Node* n : todo) {
    std::string label = n->label();
    Result<bool> r = rule->rewrite(g, n);
    if (!r.ok()) return Status(r.status()).with_context("while legalizing " + label);
    changes += *r;
  }
  if (changes) prune_values(g);
  return changes;
}

namespace {
Result<int> legalize_graph(ir::Graph& g, const std::function<bool(const ir::Node&)>& wants,
                           std::vector<LegalizeApplied>* applied) {
  int changes = 0;
  for (auto& node : g.nodes)
    for (ir::Graph* sub : node->subgraphs()) {
      auto r = legalize_graph(*sub, wants, applied);
      if (!r.ok()) return r.status();
      changes += *r;
    }
  // Rounds: a rewrite may emit an op the target also lacks (HardSwish -> HardSigmoid -> Min/Max).
  for (int round = 0; round < 8; ++round) {
    std::vector<std::pair<ir::Node*, const LegalizeRule*>> todo;
    for (const auto& n : g.nodes)
      if (wants(*n))
        if (const LegalizeRule* r = legalize_rule_for(*n)) todo.push_back({n.get(), r});
    if (todo.empty()) break;
    int this_round = 0;
    for (auto& [n, rule] : todo) {
      std::string label = n->label(), name = n->name;
      Result<bool> r = rule->rewrite(g, n);
      if (!r.ok()) return Status(r.status()).with_context("while legalizing " + label);
      if (*r && applied) applied->push_back({rule->name, name});
      this_round += *r;
    }
    if (this_round == 0) break;
    changes += this_round;
    FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  }
  if (changes) prune_values(g);
  return changes;
}
}  // namespace

Result<int> legalize(ir::Model& model, const std::function<bool(const ir::Node&)>& wants,
                     std::vector<LegalizeApplied>* applied) {
  ir::Graph& g = *model.graph;
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  auto r = legalize_graph(g, wants, applied);
  if (!r.ok()) return r.status();
  Status st = ir::verify(g);
  if (!st.ok()) return st.with_context("graph invalid after legalization");
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  return *r;
}

}  // namespace ferry::passes
