// The span of a first divergence when the candidate lacks tensors upstream of it: a device dump has no file
// for a tensor the device fused away (a Conv's output inside Conv+BatchNorm), so the first tensor that
// diverges can sit one or more nodes below the node that holds the fault. Naming only the divergent tensor's
// node sends the user to the wrong layer; the span names every node between the last tensors that match and
// the divergent one, and which of their outputs the dump lacked.
#include <algorithm>
#include <map>
#include <set>

#include "tools/compare/compare_internal.h"

namespace ferry::tools::compare {

std::optional<DivergenceSpan> divergence_span(const ir::Graph& g, const std::vector<Row>& layers, size_t divergent,
                                              const TensorMap& candidate) {
  std::map<std::string, std::pair<const ir::Node*, size_t>> producer;  // tensor -> (node, topological index)
  std::map<const ir::Node*, size_t> index_of;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    index_of[g.nodes[i].get()] = i;
    for (const ir::Value* v : g.nodes[i]->outputs)
      if (v) producer[v->name] = {g.nodes[i].get(), i};
  }
  auto start = producer.find(layers[divergent].tensor);
  if (start == producer.end()) return std::nullopt;
  // Rows before the first divergent one all match: they bound the walk upstream.
  std::set<std::string> matched;
  for (size_t i = 0; i < divergent; ++i) matched.insert(layers[i].tensor);

  // Walk up from the divergent node through tensors that were not compared (no row), to the matching
  // tensors, constants and graph inputs that feed it.
  std::set<const ir::Node*> span = {start->second.first};
  std::vector<const ir::Node*> pending = {start->second.first};
  std::string frontier;  // the matching tensor latest in topological order
  size_t frontier_at = 0;
  while (!pending.empty()) {
    const ir::Node* n = pending.back();
    pending.pop_back();
    for (const ir::Value* v : n->inputs) {
      if (!v || v->is_constant() || !v->producer) continue;  // omitted, constant, graph input
      auto p = producer.find(v->name);
      if (p == producer.end()) continue;
      if (matched.count(v->name)) {
        if (frontier.empty() || p->second.second >= frontier_at) frontier = v->name, frontier_at = p->second.second;
        continue;
      }
      if (span.insert(p->second.first).second) pending.push_back(p->second.first);
    }
  }
  if (span.size() < 2) return std::nullopt;  // the divergent node is fed by matching tensors: it is the one

  DivergenceSpan s;
  std::vector<std::pair<size_t, const ir::Node*>> ordered;
  for (const ir::Node* n : span) ordered.emplace_back(index_of.at(n), n);
  std::sort(ordered.begin(), ordered.end());
  for (const auto& [at, n] : ordered) {
    s.nodes.push_back(onnx_node_of(*n));
    if (n == start->second.first) continue;
    for (const ir::Value* v : n->outputs)
      if (v && !candidate.count(v->name)) s.lacked.push_back({onnx_node_of(*n), v->name});
  }
  if (!frontier.empty()) {
    s.last_match_tensor = frontier;
    s.last_match = onnx_node_of(*producer.at(frontier).first);
  }
  return s;
}

std::string describe_span(const DivergenceSpan& s) {
  std::string nodes, lacked;
  for (const std::string& n : s.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
  for (const auto& [node, tensor] : s.lacked) lacked += (lacked.empty() ? "" : ", ") + node + "'s output '" + tensor + "'";
  std::string out = "first divergence between " +
                    (s.last_match.empty() ? std::string("the inputs") : "'" + s.last_match + "' (last match)") + " and '" +
                    s.nodes.back() + "': nodes " + nodes;
  if (!lacked.empty()) out += "; the dump lacks " + lacked;
  return out;
}

}  // namespace ferry::tools::compare
