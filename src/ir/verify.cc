// Structural checks of a graph; passes run it after every patch.
#include <set>

#include "ir/graph.h"

namespace ferry::ir {

namespace {
Status verify_scope(const Graph& g, std::set<const Value*>& available) {
  std::set<const Value*> local;
  for (const Value* v : g.inputs) {
    if (!v) return Status::invalid("graph '" + g.name + "' has a null input");
    local.insert(v);
  }
  for (const auto& v : g.values)
    if (v->is_constant()) local.insert(v.get());
  for (const Value* v : local) available.insert(v);

  std::set<const Value*> produced;
  for (const auto& node : g.nodes) {
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Value* in = node->inputs[i];
      if (!in) continue;
      if (!available.count(in))
        return Status::invalid(node->label() + " uses '" + in->name +
                               "', which no earlier node, graph input or initializer provides");
    }
    for (Graph* sub : node->subgraphs()) {
      std::set<const Value*> inner = available;
      Status st = verify_scope(*sub, inner);
      if (!st.ok()) return st.with_context("in a subgraph of " + node->label());
    }
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const Value* out = node->outputs[i];
      if (!out) continue;
      if (out->producer != node.get() || out->producer_output != static_cast<int>(i))
        return Status::invalid(node->label() + ": output '" + out->name + "' has an inconsistent producer link");
      if (!produced.insert(out).second || local.count(out))
        return Status::invalid("value '" + out->name + "' is produced more than once");
      available.insert(out);
    }
  }
  for (const Value* v : g.outputs) {
    if (!v) return Status::invalid("graph '" + g.name + "' has a null output");
    if (!available.count(v)) return Status::invalid("graph output '" + v->name + "' is not produced by any node");
  }
  return Status();
}
}  // namespace

Status verify(const Graph& g) {
  std::set<const Value*> available;
  // Outer-scope values are visible to subgraphs; a top-level call starts from the ancestors' values.
  for (const Graph* p = g.parent; p; p = p->parent) {
    for (const auto& v : p->values) available.insert(v.get());
  }
  return verify_scope(g, available);
}

}  // namespace ferry::ir
