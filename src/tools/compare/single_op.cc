// --single-op: separates a node's own error from the error it inherits. For each compared tensor, the
// "unit" is the set of candidate nodes that compute it from ONNX-named values, walking back through
// values without an ONNX counterpart (a fusion's or the precision pass's internals). The unit runs as
// a small graph, with the candidate's backend and kernels, fed with the golden tensors of its inputs;
// what error remains is the unit's own.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "tools/compare/compare_internal.h"

namespace ferry::tools::compare {

namespace {

constexpr size_t kMaxUnitNodes = 256;

struct Unit {
  std::vector<const ir::Node*> nodes;          // in graph order
  std::vector<const ir::Value*> boundary;      // non-constant inputs fed from the golden
  std::string why_not;                         // non-empty: cannot be re-run
};

Unit collect_unit(const ir::Value* target, const TensorMap& golden, const std::map<const ir::Node*, size_t>& pos) {
  Unit u;
  std::set<const ir::Node*> in_unit;
  std::set<const ir::Value*> boundary;
  std::vector<const ir::Node*> work{target->producer};
  while (!work.empty()) {
    const ir::Node* n = work.back();
    work.pop_back();
    if (!n || in_unit.count(n)) continue;
    if (!n->subgraphs().empty()) {
      u.why_not = "its unit holds a node with a subgraph (" + n->label() + ")";
      return u;
    }
    in_unit.insert(n);
    if (in_unit.size() > kMaxUnitNodes) {
      u.why_not = "its unit has more than " + std::to_string(kMaxUnitNodes) + " nodes";
      return u;
    }
    for (const ir::Value* in : n->inputs) {
      if (!in || in->is_constant()) continue;
      const bool named = !in->onnx_name.empty() && golden.count(in->onnx_name);
      if (named || in->is_graph_input || !in->producer) {
        if (!named) {
          u.why_not = "input '" + in->name + "' has no golden tensor";
          return u;
        }
        boundary.insert(in);
      } else {
        work.push_back(in->producer);
      }
    }
  }
  u.nodes.assign(in_unit.begin(), in_unit.end());
  std::sort(u.nodes.begin(), u.nodes.end(), [&](const ir::Node* a, const ir::Node* b) { return pos.at(a) < pos.at(b); });
  u.boundary.assign(boundary.begin(), boundary.end());
  return u;
}

// The unit as a model of its own: boundary values become graph inputs, constants are shared.
Result<std::pair<std::unique_ptr<ir::Model>, std::map<std::string, RtValue>>> build_unit(
    const ir::Model& src, const Unit& u, const ir::Value* target, const TensorMap& golden) {
  auto m = std::make_unique<ir::Model>();
  m->opsets = src.opsets;
  m->ir_version = src.ir_version;
  m->source_path = "single-op unit of '" + target->onnx_name + "'";
  m->graph = std::make_shared<ir::Graph>();
  ir::Graph& g = *m->graph;
  g.name = "unit";
  std::map<const ir::Value*, ir::Value*> map;
  std::map<std::string, RtValue> feeds;
  for (const ir::Value* b : u.boundary) {
    ir::Value* v = g.add_value(b->name);
    v->dtype = b->dtype;
    v->onnx_name = b->onnx_name;
    Tensor t = golden.at(b->onnx_name);
    // The device stores the input in the candidate's dtype (e.g. fp16 after the precision pass).
    if (b->dtype != DType::kUndefined && t.dtype() != b->dtype) t = t.cast(b->dtype);
    v->shape = Shape();
    for (int64_t d : t.dims()) v->shape->push_back(Dim(d));
    v->is_graph_input = true;
    g.inputs.push_back(v);
    map[b] = v;
    feeds.emplace(v->name, RtValue(t));
  }
  auto value_for = [&](const ir::Value* in) -> ir::Value* {
    if (!in) return nullptr;
    if (auto it = map.find(in); it != map.end()) return it->second;
    // Constants (the only inputs not yet mapped: the walk made everything else a boundary or a node).
    ir::Value* v = g.add_value(in->name);
    v->dtype = in->dtype;
    v->shape = in->shape;
    v->onnx_name = in->onnx_name;
    v->initializer = in->initializer;
    map[in] = v;
    return v;
  };
  for (const ir::Node* n : u.nodes) {
    ir::Node* c = g.add_node(n->op_type, n->name);
    c->domain = n->domain;
    c->opset = n->opset;
    c->attrs = n->attrs;
    c->provenance = n->provenance;
    for (const ir::Value* in : n->inputs) c->inputs.push_back(value_for(in));
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      const ir::Value* o = n->outputs[k];
      if (!o) {
        c->outputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = g.add_value(o->name);
      v->dtype = o->dtype;
      v->shape = o->shape;
      v->kind = o->kind;
      v->onnx_name = o->onnx_name;
      v->producer = c;
      v->producer_output = static_cast<int>(k);
      map[o] = v;
      c->outputs.push_back(v);
    }
  }
  g.outputs.push_back(map.at(target));
  return std::make_pair(std::move(m), std::move(feeds));
}

}  // namespace

Status run_single_op(const ir::Model& candidate, const std::map<std::string, const ir::Value*>& by_onnx,
                     const TensorMap& golden, const runtime::SessionOptions& so_in, const Thresholds& th,
                     std::vector<Row>& rows, const std::function<void(const std::string&)>& progress) {
  std::map<const ir::Node*, size_t> pos;
  for (size_t i = 0; i < candidate.graph->nodes.size(); ++i) pos[candidate.graph->nodes[i].get()] = i;
  // The unit's nodes are already optimized (and already carry the precision decisions): run them as they are.
  runtime::SessionOptions so;
  so.backend = so_in.backend;
  so.backend_options = so_in.backend_options;
  so.opt_level = 0;
  size_t done = 0;
  for (Row& row : rows) {
    ++done;
    auto it = by_onnx.find(row.tensor);
    if (it == by_onnx.end() || !it->second->producer) {
      row.single_op_note = "not computed by a node";
      continue;
    }
    if (progress && done % 25 == 0) progress(fmt::format("single-op: {}/{} ...", done, rows.size()));
    Unit u = collect_unit(it->second, golden, pos);
    if (!u.why_not.empty()) {
      row.single_op_note = "not re-run: " + u.why_not;
      continue;
    }
    row.single_op_nodes = static_cast<int>(u.nodes.size());
    auto built = build_unit(candidate, u, it->second, golden);
    if (!built.ok()) {
      row.single_op_note = "not re-run: " + built.status().to_string();
      continue;
    }
    auto session = runtime::Session::from_model(std::move(built->first), so);
    if (!session.ok()) {
      row.single_op_note = "not re-run: " + session.status().to_string();
      continue;
    }
    auto outs = (*session)->run(built->second);
    if (!outs.ok() || outs->empty() || !outs->front().second.is_tensor()) {
      row.single_op_note = "re-run failed: " + (outs.ok() ? std::string("no tensor output") : outs.status().to_string());
      continue;
    }
    auto m = compute_metrics(golden.at(row.tensor), outs->front().second.tensor, th);
    if (!m.ok()) {
      row.single_op_note = m.status().message();
      continue;
    }
    row.single_op = *m;
  }
  return Status();
}

}  // namespace ferry::tools::compare
