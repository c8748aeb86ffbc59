#include "passes/pass_util.h"

#include <algorithm>
#include <cmath>

namespace ferry::passes {

namespace {
// Values of `outer` scopes that a subgraph (recursively) reads.
void collect_outer_reads(const ir::Graph& sub, std::set<const ir::Value*>& out) {
  for (const auto& n : sub.nodes) {
    for (const ir::Value* v : n->inputs)
      if (v && v->graph != &sub) out.insert(v);
    for (const ir::Graph* s : n->subgraphs()) collect_outer_reads(*s, out);
  }
  for (const ir::Value* v : sub.outputs)
    if (v && v->graph != &sub) out.insert(v);
}

void replace_in_subgraph(ir::Graph& sub, ir::Value* from, ir::Value* to) {
  for (auto& n : sub.nodes) {
    for (auto& v : n->inputs)
      if (v == from) v = to;
    for (ir::Graph* s : n->subgraphs()) replace_in_subgraph(*s, from, to);
  }
  for (auto& v : sub.outputs)
    if (v == from) v = to;
}
}  // namespace

Uses::Uses(const ir::Graph& g) {
  for (const auto& n : g.nodes) {
    for (const ir::Value* v : n->inputs) {
      if (!v) continue;
      auto& u = users_[v];
      if (std::find(u.begin(), u.end(), n.get()) == u.end()) u.push_back(n.get());
      ++counts_[v];
    }
    std::set<const ir::Value*> outer;
    for (const ir::Graph* s : n->subgraphs()) collect_outer_reads(*s, outer);
    for (const ir::Value* v : outer) {
      subgraph_reads_.insert(v);
      auto& u = users_[v];
      if (std::find(u.begin(), u.end(), n.get()) == u.end()) u.push_back(n.get());
      counts_[v] += 2;  // a subgraph use is never a "single use" to fuse through
    }
  }
  for (const ir::Value* v : g.outputs) {
    outputs_.insert(v);
    ++counts_[v];
  }
}

namespace {
thread_local const PreparingUses* preparing_uses = nullptr;
}  // namespace

PreparingUses::PreparingUses(const ir::Graph& g, const Uses& uses) : graph_(&g), uses_(&uses), outer_(preparing_uses) {
  preparing_uses = this;
}

PreparingUses::~PreparingUses() { preparing_uses = outer_; }

const Uses* PreparingUses::of(const ir::Graph* g) {
  for (const PreparingUses* p = preparing_uses; p; p = p->outer_)
    if (p->graph_ == g) return p->uses_;
  return nullptr;
}

const std::vector<ir::Node*>& Uses::users(const ir::Value* v) const {
  auto it = users_.find(v);
  return it == users_.end() ? none_ : it->second;
}

int Uses::use_count(const ir::Value* v) const {
  auto it = counts_.find(v);
  return it == counts_.end() ? 0 : it->second;
}

bool Uses::single_use(const ir::Value* v) const { return !is_output(v) && use_count(v) == 1; }

bool replace_value(ir::Graph& g, ir::Value* from, ir::Value* to) {
  if (from == to) return true;
  const bool from_is_output = std::find(g.outputs.begin(), g.outputs.end(), from) != g.outputs.end();
  if (from_is_output) {
    const bool to_is_output = std::find(g.outputs.begin(), g.outputs.end(), to) != g.outputs.end();
    if (to->graph != &g || !to->producer || to->is_graph_input || to_is_output) return false;
    // `to` takes the output's name, so the graph's interface does not change.
    std::string keep = from->name, keep_onnx = from->onnx_name;
    from->name = g.fresh_name(keep + "_replaced");
    to->name = keep;
    to->onnx_name = keep_onnx;
    g.reindex();
  }
  replace_in_subgraph(g, from, to);
  return true;
}

void remove_nodes(ir::Graph& g, const std::set<ir::Node*>& dead) {
  if (dead.empty()) return;
  for (ir::Node* n : dead)
    for (ir::Value* v : n->outputs)
      if (v && v->producer == n) v->producer = nullptr, v->producer_output = -1;
  g.nodes.erase(std::remove_if(g.nodes.begin(), g.nodes.end(), [&](const auto& n) { return dead.count(n.get()) != 0; }),
                g.nodes.end());
}

void remove_node(ir::Graph& g, ir::Node* n) { remove_nodes(g, {n}); }

int prune_values(ir::Graph& g) {
  std::set<const ir::Value*> used;
  for (const auto& n : g.nodes) {
    for (const ir::Value* v : n->inputs) used.insert(v);
    for (const ir::Value* v : n->outputs) used.insert(v);
    for (const ir::Graph* s : n->subgraphs()) collect_outer_reads(*s, used);
  }
  for (const ir::Value* v : g.outputs) used.insert(v);
  for (const ir::Value* v : g.inputs) used.insert(v);
  int constants = 0;
  for (const auto& v : g.values) constants += !used.count(v.get()) && v->is_constant();
  // Values of nested subgraphs may reference ours only through node inputs, collected above.
  g.values.erase(std::remove_if(g.values.begin(), g.values.end(), [&](const auto& v) { return !used.count(v.get()); }),
                 g.values.end());
  g.reindex();
  return constants;
}

ir::Node* replace_with(ir::Graph& g, const std::vector<ir::Node*>& covered, const std::string& op_type,
                       const std::string& domain, int opset, std::vector<ir::Value*> inputs, ir::Value* out) {
  std::set<ir::Node*> cov(covered.begin(), covered.end());
  size_t last = 0;
  std::vector<std::string> prov;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!cov.count(g.nodes[i].get())) continue;
    last = i;
    for (const auto& p : g.nodes[i]->provenance)
      if (std::find(prov.begin(), prov.end(), p) == prov.end()) prov.push_back(p);
  }
  auto node = std::make_unique<ir::Node>();
  node->op_type = op_type;
  node->domain = domain;
  node->opset = opset;
  node->name = out->producer ? out->producer->name : g.nodes[last]->name;
  node->provenance = std::move(prov);
  node->inputs = std::move(inputs);
  ir::Node* raw = node.get();
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(last) + 1, std::move(node));
  remove_nodes(g, cov);
  out->producer = raw;
  out->producer_output = 0;
  raw->outputs = {out};
  return raw;
}

ir::Value* add_constant(ir::Graph& g, const std::string& base, Tensor t) {
  ir::Value* v = g.add_value(g.fresh_name(base));
  v->dtype = t.dtype();
  v->shape = to_shape(t.dims());
  v->initializer = std::move(t);
  return v;
}

ir::Node* producer_op(const ir::Value* v, const char* op) {
  ir::Node* p = v ? v->producer : nullptr;
  return p && p->op_type == op && p->domain.empty() && p->num_outputs() == 1 && p->has_input(0) ? p : nullptr;
}

const Tensor* constant_of(const ir::Value* v) { return v && v->is_constant() ? &v->initializer : nullptr; }

std::optional<double> scalar_of(const ir::Value* v) {
  const Tensor* t = constant_of(v);
  if (!t || t->numel() != 1 || !t->is_plain()) return std::nullopt;
  return t->as_double(0);
}

bool is_scalar(const ir::Value* v, double want, double tol) {
  auto s = scalar_of(v);
  return s && std::fabs(*s - want) <= tol * std::max(1.0, std::fabs(want));
}

std::optional<std::vector<int64_t>> static_shape(const ir::Value* v) {
  if (!v || v->kind != ir::ValueKind::kTensor || !v->shape || !is_static(*v->shape)) return std::nullopt;
  return static_dims(*v->shape);
}

bool same_shape(const ir::Value* a, const ir::Value* b) {
  if (!a || !b || !a->shape || !b->shape || a->shape->size() != b->shape->size()) return false;
  for (size_t i = 0; i < a->shape->size(); ++i) {
    const Dim &x = (*a->shape)[i], &y = (*b->shape)[i];
    if (x.is_static() ? !(y.is_static() && x.value == y.value) : (x.symbol.empty() || x.symbol != y.symbol)) return false;
  }
  return true;
}

ir::Value* other_input(const ir::Node* n, const ir::Value* v) {
  if (n->inputs.size() != 2 || !n->inputs[0] || !n->inputs[1]) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

ir::Attribute make_ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute make_floats(std::vector<float> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
ir::Attribute make_strings(std::vector<std::string> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kStrings;
  a.strings = std::move(v);
  return a;
}
ir::Attribute make_float(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
ir::Attribute make_int(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
ir::Attribute make_string(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

Result<int> rewrite_until_fixed(ir::Graph& g, const std::function<Result<bool>(ir::Node&, const Uses&)>& rewrite_at) {
  int changes = 0;
  for (bool again = true; again;) {
    again = false;
    const Uses uses(g);
    for (auto& node : g.nodes) {
      FERRY_ASSIGN_OR_RETURN(const bool rewrote, rewrite_at(*node, uses));
      if (rewrote) {
        ++changes;
        again = true;
        break;  // the node list changed under the walk
      }
    }
  }
  return changes;
}

std::optional<BnParams> bn_params(const ir::Node& bn) {
  if (bn.num_inputs() != 5 || bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) != 1) return std::nullopt;
  for (int i = 1; i < 5; ++i)
    if (!bn.has_input(i) || !bn.inputs[i]->is_constant() || bn.inputs[i]->initializer.rank() != 1) return std::nullopt;
  for (int i = 1; i < bn.num_outputs(); ++i)
    if (bn.outputs[i]) return std::nullopt;  // running-stat outputs (training) are wanted
  const int64_t c = bn.inputs[1]->initializer.numel();
  for (int i = 2; i < 5; ++i)
    if (bn.inputs[i]->initializer.numel() != c) return std::nullopt;
  const double eps = bn.attr_float("epsilon", 1e-5f);
  BnParams p;
  std::vector<double> scale = bn.inputs[1]->initializer.to_double_vector(), b = bn.inputs[2]->initializer.to_double_vector(),
                      mean = bn.inputs[3]->initializer.to_double_vector(), var = bn.inputs[4]->initializer.to_double_vector();
  for (int64_t i = 0; i < c; ++i) {
    if (!(var[i] + eps > 0)) return std::nullopt;
    p.s.push_back(scale[i] / std::sqrt(var[i] + eps));
    p.t.push_back(b[i] - mean[i] * p.s.back());
  }
  return p;
}

}  // namespace ferry::passes
