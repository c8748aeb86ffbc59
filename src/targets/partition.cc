// Partitioning (docs/targets.md). Grouping: Kahn's topological sort that, among the ready nodes,
// keeps taking nodes of the side it is on and switches only when that side has none ready; on
// series-parallel graphs this yields the fewest device/host switches a topological order allows for
// the given assignment, and it never breaks a dependency.
#include "targets/partition.h"

#include <map>
#include <set>

#include "ops/op.h"

namespace ferry::targets {

int64_t value_bytes(const ir::Value* v) {
  if (!v || !v->shape || !is_static(*v->shape) || v->dtype == DType::kUndefined) return -1;
  int64_t n = 1;
  for (int64_t d : static_dims(*v->shape)) n *= d;
  return n * static_cast<int64_t>(dtype_size(v->dtype));
}

namespace {
void add_bytes(int64_t& total, int64_t b) { total = (total < 0 || b < 0) ? -1 : total + b; }

std::string value_label(const ir::Value* v) { return v->onnx_name.empty() ? v->name : v->onnx_name; }
}  // namespace

Result<Partition> partition(ir::Model& model, const Target& t, const Target* host, const PartitionOptions& opts) {
  ir::Graph& g = *model.graph;
  Partition p;
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  if (opts.legalize) {
    // A node is rewritten when the device cannot run it and a rule's output can (nodes a rewrite emits
    // get the same question in the next round). Data-dependent nodes are never rewritten.
    const std::set<const ir::Value*> none;
    auto wants = [&](const ir::Node& n) { return place_node(t, host, n, none).placement == Placement::kRewritten; };
    auto r = passes::legalize(model, wants, &p.rewrites);
    if (!r.ok()) return r.status();
  }
  std::set<const ir::Value*> dd = data_dependent_values(t, g);
  std::map<const ir::Node*, NodePlacement> place;
  for (const auto& n : g.nodes) place[n.get()] = place_node(t, host, *n, dd);
  auto on_device = [&](const ir::Node* n) {
    Placement pl = place[n].placement;
    return pl == Placement::kDevice || pl == Placement::kRewritten || pl == Placement::kUnsupported;
  };

  // No ping-pong: a device node that only reads host values (or constants) and whose every reader is
  // on the host (a Flatten between two fallback nodes) stays on the host, which the host can run: two
  // transfers saved for one node's work.
  if (host) {
    std::map<const ir::Value*, std::vector<const ir::Node*>> readers;
    for (const auto& n : g.nodes)
      for (const ir::Value* v : n->inputs)
        if (v) readers[v].push_back(n.get());
    const std::set<const ir::Value*> none;
    for (const auto& n : g.nodes) {
      if (place[n.get()].placement != Placement::kDevice || !n->subgraphs().empty()) continue;
      // Only between host nodes: a tail node feeding just the model outputs keeps its device work.
      bool reads_host = false, reads_device = false, feeds_device = false, feeds_any = false;
      for (const ir::Value* v : n->inputs) {
        if (!v || v->is_constant()) continue;
        if (!v->producer || v->is_graph_input) { reads_device = true; continue; }  // model input: arrives on the device
        (on_device(v->producer) ? reads_device : reads_host) = true;
      }
      for (const ir::Value* v : n->outputs) {
        if (!v) continue;
        for (const ir::Node* r : readers[v]) {
          feeds_any = true;
          feeds_device = feeds_device || on_device(r);
        }
      }
      if (reads_host && !reads_device && feeds_any && !feeds_device && device_rejects(*host, *n, none).empty())
        place[n.get()] = {Placement::kHost, "kept on the host between host nodes (saves two transfers)", ""};
    }
  }

  // Regroup: Kahn's algorithm preferring the current side.
  std::map<const ir::Value*, const ir::Node*> producer;
  for (const auto& n : g.nodes)
    for (const ir::Value* v : n->outputs)
      if (v) producer[v] = n.get();
  std::map<const ir::Node*, int> pending;
  std::map<const ir::Node*, std::vector<ir::Node*>> users;
  for (const auto& n : g.nodes) {
    std::set<const ir::Node*> deps;
    for (const ir::Value* v : n->inputs)
      if (v && producer.count(v)) deps.insert(producer[v]);
    // Outer-scope reads inside bodies are dependencies too.
    for (const ir::Graph* body : n->subgraphs())
      for (const auto& inner : body->nodes)
        for (const ir::Value* v : inner->inputs)
          if (v && producer.count(v) && v->graph == &g) deps.insert(producer[v]);
    deps.erase(n.get());
    pending[n.get()] = static_cast<int>(deps.size());
    for (const ir::Node* d : deps) users[d].push_back(n.get());
  }
  std::vector<std::unique_ptr<ir::Node>> order;
  std::map<const ir::Node*, std::unique_ptr<ir::Node>> owned;
  std::vector<ir::Node*> ready_list;  // in original order, for determinism
  std::map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i].get()] = i;
  for (auto& n : g.nodes) {
    if (pending[n.get()] == 0) ready_list.push_back(n.get());
    owned[n.get()] = std::move(n);
  }
  bool side = ready_list.empty() ? true : on_device(ready_list.front());
  while (!ready_list.empty()) {
    auto pick = ready_list.end();
    for (auto it = ready_list.begin(); it != ready_list.end(); ++it)
      if (on_device(*it) == side && (pick == ready_list.end() || index[*it] < index[*pick])) pick = it;
    if (pick == ready_list.end()) {
      side = !side;
      continue;
    }
    ir::Node* n = *pick;
    ready_list.erase(pick);
    order.push_back(std::move(owned[n]));
    for (ir::Node* u : users[n])
      if (--pending[u] == 0) ready_list.push_back(u);
  }
  if (order.size() != owned.size()) return Status::internal("partition: the graph has a cycle");
  g.nodes = std::move(order);

  // Segments, transfers, counts.
  for (const auto& n : g.nodes) {
    const NodePlacement& pl = place[n.get()];
    p.placements.push_back(pl);
    p.by_name[n->name] = pl;
    bool dev = on_device(n.get());
    if (pl.placement == Placement::kUnsupported) ++p.unsupported_nodes;
    else if (dev) ++p.device_nodes;
    else ++p.host_nodes;
    if (p.segments.empty() || p.segments.back().device != dev) p.segments.push_back({dev, {}});
    p.segments.back().nodes.push_back(n->name);
  }
  // A target with a host: model inputs start there and outputs end there.
  const bool crossing = host != nullptr;
  std::set<std::pair<const ir::Value*, bool>> seen;
  for (const auto& n : g.nodes) {
    bool dev = on_device(n.get());
    std::vector<const ir::Value*> reads(n->inputs.begin(), n->inputs.end());
    for (const ir::Graph* body : n->subgraphs())
      for (const auto& inner : body->nodes)
        for (const ir::Value* v : inner->inputs)
          if (v && v->graph == &g) reads.push_back(v);
    for (const ir::Value* v : reads) {
      if (!v || v->is_constant()) continue;
      if (v->is_graph_input || !producer.count(v)) {
        if (crossing && dev && seen.insert({v, true}).second) add_bytes(p.input_bytes, value_bytes(v));
        continue;
      }
      bool from_dev = on_device(producer[v]);
      if (from_dev == dev || !seen.insert({v, dev}).second) continue;
      p.transfers.push_back({value_label(v), dev, value_bytes(v), n->name});
      add_bytes(p.transfer_bytes, value_bytes(v));
    }
  }
  if (crossing)
    for (const ir::Value* v : g.outputs)
      if (producer.count(v) && on_device(producer[v])) add_bytes(p.output_bytes, value_bytes(v));
  FERRY_RETURN_IF_ERROR(ir::verify(g));
  return p;
}

}  // namespace ferry::targets
