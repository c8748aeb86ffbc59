// Removes nodes whose outputs nothing reads (graph outputs, later nodes, subgraph outer-scope uses)
// and constants nothing uses. ONNX ops have no side effects, so an unread node is dead.
#include <set>

#include "passes/passes.h"

namespace ferry::passes {

namespace {
void collect_reads(const ir::Graph& sub, std::set<const ir::Value*>& out) {
  for (const auto& n : sub.nodes) {
    for (const ir::Value* v : n->inputs) out.insert(v);
    for (const ir::Graph* s : n->subgraphs()) collect_reads(*s, out);
  }
  for (const ir::Value* v : sub.outputs) out.insert(v);
}
}  // namespace

Result<int> eliminate_dead_code(ir::Graph& g, const PassContext&) {
  std::set<const ir::Value*> needed(g.outputs.begin(), g.outputs.end());
  std::set<ir::Node*> dead;
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    ir::Node* n = it->get();
    bool live = false;
    for (const ir::Value* v : n->outputs) live = live || (v && needed.count(v));
    if (!live) {
      dead.insert(n);
      continue;
    }
    for (const ir::Value* v : n->inputs) needed.insert(v);
    for (const ir::Graph* s : n->subgraphs()) collect_reads(*s, needed);
  }
  remove_nodes(g, dead);
  int pruned = prune_values(g);
  return static_cast<int>(dead.size()) + pruned;
}

}  // namespace ferry::passes
