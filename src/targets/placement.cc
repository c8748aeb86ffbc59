// Node placement against a target profile (docs/targets.md: "How a node is placed").
#include "targets/placement.h"

#include <algorithm>

#include "passes/legalize.h"

namespace ferry::targets {

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::kDevice: return "device";
    case Placement::kRewritten: return "rewritten";
    case Placement::kHost: return "host fallback";
    case Placement::kUnsupported: return "unsupported";
  }
  return "?";
}

namespace {

// Ops whose output shape depends on input values whatever the profile says.
bool inherently_data_dependent(const ir::Node& n) {
  static const std::set<std::string> k = {"NonZero", "Unique", "NonMaxSuppression", "Compress", "StringSplit"};
  return (n.domain.empty() || n.domain == "ai.onnx") && k.count(n.op_type);
}

bool is_data_dependent_op(const Target& t, const ir::Node& n) {
  if (inherently_data_dependent(n)) return true;
  const OpRule* r = t.rule(n.domain, n.op_type);
  return r && r->data_dependent;
}

bool static_value(const ir::Value* v) { return v->shape && is_static(*v->shape); }

bool constant_value(const ir::Value* v) {
  return v->is_constant() || (v->producer && v->producer->op_type == "Constant" && v->producer->domain.empty());
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string dtype_list(const std::vector<DType>& v) {
  std::vector<std::string> names;
  for (DType d : v) names.emplace_back(dtype_name(d));
  return join(names);
}

std::string attr_text(const ir::Attribute& a) {
  switch (a.kind) {
    case ir::Attribute::Kind::kInt: return std::to_string(a.i);
    case ir::Attribute::Kind::kString: return a.s;
    case ir::Attribute::Kind::kFloat: {
      std::string s = std::to_string(a.f);
      return s;
    }
    default: return "?";
  }
}

std::string slot_label(const char* kind, int i, const ir::Value* v) {
  return std::string(kind) + " " + std::to_string(i) + " '" + v->name + "'";
}

}  // namespace

std::set<const ir::Value*> data_dependent_values(const Target& t, const ir::Graph& g) {
  std::set<const ir::Value*> dd;
  for (const auto& n : g.nodes) {
    bool from_op = is_data_dependent_op(t, *n);
    bool from_input = false;
    for (const ir::Value* v : n->inputs) from_input = from_input || (v && dd.count(v));
    for (const ir::Value* v : n->outputs)
      if (v && (from_op || (from_input && !static_value(v)))) dd.insert(v);
  }
  return dd;
}

Rejection device_rejects(const Target& t, const ir::Node& n, const std::set<const ir::Value*>& dd) {
  const std::string op = (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
  const bool control = !n.subgraphs().empty();
  if (control && !t.allows_control_flow(n.op_type))
    return {"control flow (" + n.op_type + ") is not supported on " + t.name +
                (t.control_flow.empty() ? "" : " (it runs " + join(t.control_flow) + ")"),
            false};
  const OpRule* rule = t.rule(n.domain, n.op_type);
  if (!rule)
    return {t.all_ops ? "ferry has no kernel for " + op : "op " + op + " is not in " + t.name + "'s operator list", false};
  int lo = rule->min_opset ? rule->min_opset : t.min_opset, hi = rule->max_opset ? rule->max_opset : t.max_opset;
  if (n.opset && (n.opset < lo || n.opset > hi))
    return {"opset " + std::to_string(n.opset) + " is outside " + t.name + "'s range " + std::to_string(lo) + ".." +
                std::to_string(hi) + " for " + op,
            false};
  // Element types: the device's storage types, then the op's own slots.
  auto check_dtype = [&](const char* kind, int i, const ir::Value* v) -> std::string {
    if (!v || v->dtype == DType::kUndefined || v->kind != ir::ValueKind::kTensor) return "";
    if (!t.dtypes.empty() && std::find(t.dtypes.begin(), t.dtypes.end(), v->dtype) == t.dtypes.end())
      return slot_label(kind, i, v) + " is " + std::string(dtype_name(v->dtype)) + ", which " + t.name +
             " does not store (" + dtype_list(t.dtypes) + ")";
    for (const std::string& key : {std::string("*"), std::string(kind == std::string("input") ? "in:" : "out:") + std::to_string(i)}) {
      auto it = rule->dtypes.find(key);
      if (it == rule->dtypes.end()) continue;
      if (std::find(it->second.begin(), it->second.end(), v->dtype) == it->second.end())
        return slot_label(kind, i, v) + " is " + std::string(dtype_name(v->dtype)) + "; " + t.name + "'s " + op +
               " takes " + dtype_list(it->second);
    }
    return "";
  };
  for (int i = 0; i < n.num_inputs(); ++i)
    if (std::string r = check_dtype("input", i, n.inputs[i]); !r.empty()) return {r, false};
  for (int i = 0; i < n.num_outputs(); ++i)
    if (std::string r = check_dtype("output", i, n.outputs[i]); !r.empty()) return {r, false};
  for (const auto& [name, c] : rule->attrs) {
    std::string value;
    bool dflt = false;
    if (const ir::Attribute* a = n.attr(name)) value = attr_text(*a);
    else if (c.dflt) value = *c.dflt, dflt = true;
    else continue;
    if (std::find(c.values.begin(), c.values.end(), value) == c.values.end())
      return {"attribute " + name + " = " + value + (dflt ? " (the default)" : "") + "; " + t.name + "'s " + op +
                  " allows " + join(c.values),
              false};
  }
  for (int i : rule->const_inputs)
    if (n.has_input(i) && !constant_value(n.inputs[i]))
      return {slot_label("input", i, n.inputs[i]) + " must be a constant on " + t.name + " (it is computed at run time)",
              false};
  if (t.data_dependent_shapes != "device") {
    if (is_data_dependent_op(t, n))
      return {"data-dependent output shape (the size of " + op + "'s output depends on the input values)", true};
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.has_input(i) && dd.count(n.inputs[i]))
        return {slot_label("input", i, n.inputs[i]) + " has a data-dependent shape" +
                    (n.inputs[i]->producer ? " (from " + n.inputs[i]->producer->label() + ")" : ""),
                true};
  }
  // Allowed control flow: the body must run on the device too.
  for (const ir::Graph* body : n.subgraphs()) {
    std::set<const ir::Value*> body_dd = data_dependent_values(t, *body);
    for (const auto& inner : body->nodes) {
      Rejection r = device_rejects(t, *inner, body_dd);
      if (!r.empty()) return {n.op_type + " body: " + inner->label() + ": " + r.reason, r.data_dependent};
    }
  }
  return {};
}

namespace {
bool op_runs(const Target& t, const std::string& op, int opset, int depth) {
  const OpRule* rule = t.rule("", op);
  if (rule) {
    int lo = rule->min_opset ? rule->min_opset : t.min_opset, hi = rule->max_opset ? rule->max_opset : t.max_opset;
    if (opset == 0 || (opset >= lo && opset <= hi)) return true;
  }
  if (depth > 3) return false;
  for (const passes::LegalizeRule& r : passes::legalize_rules()) {
    if (op != r.op_type) continue;
    bool all = true;
    for (const std::string& e : r.emits) all = all && op_runs(t, e, opset, depth + 1);
    if (all) return true;
  }
  return false;
}
}  // namespace

bool rewrite_runs_on(const Target& t, const std::string& rule_name, const ir::Node& n) {
  for (const passes::LegalizeRule& r : passes::legalize_rules()) {
    if (rule_name != r.name) continue;
    // Upsample's rewrite is a Resize at opset 10 whatever the model's opset.
    int opset = std::string(r.name) == "legalize_upsample" ? 10 : n.opset;
    for (const std::string& e : r.emits)
      if (!op_runs(t, e, opset, 1)) return false;
    return true;
  }
  return false;
}

NodePlacement place_node(const Target& t, const Target* host, const ir::Node& n,
                         const std::set<const ir::Value*>& dd) {
  Rejection r = device_rejects(t, n, dd);
  if (r.empty()) return {Placement::kDevice, "", ""};
  if (!r.data_dependent)
    if (const passes::LegalizeRule* rule = passes::legalize_rule_for(n))
      if (rewrite_runs_on(t, rule->name, n))
        return {Placement::kRewritten, r.reason + "; rewritten into " + join(rule->emits), rule->name};
  if (r.data_dependent && t.data_dependent_shapes == "unsupported") return {Placement::kUnsupported, r.reason, ""};
  if (host) {
    static const std::set<const ir::Value*> none;
    Rejection h = device_rejects(*host, n, none);
    if (h.empty()) return {Placement::kHost, r.reason, ""};
    return {Placement::kUnsupported, r.reason + "; the host (" + host->name + ") cannot run it either: " + h.reason, ""};
  }
  return {Placement::kUnsupported, r.reason, ""};
}

std::vector<NodePlacement> place_graph(const Target& t, const Target* host, const ir::Graph& g) {
  std::set<const ir::Value*> dd = data_dependent_values(t, g);
  std::vector<NodePlacement> out;
  for (const auto& n : g.nodes) out.push_back(place_node(t, host, *n, dd));
  return out;
}

}  // namespace ferry::targets
