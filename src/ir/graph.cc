#include "ir/graph.h"

namespace ferry::ir {

std::string Value::type_string() const {
  std::string elem = dtype == DType::kUndefined ? "?" : std::string(dtype_name(dtype));
  std::string shp = shape ? shape_to_string(*shape) : "[?]";
  switch (kind) {
    case ValueKind::kSequence: return "seq(" + elem + ")";
    case ValueKind::kOptional: return "optional(" + elem + shp + ")";
    default: return elem + shp;
  }
}

const Attribute* Node::attr(const std::string& n) const {
  auto it = attrs.find(n);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(const std::string& n, int64_t dflt) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::kInt ? a->i : dflt;
}

float Node::attr_float(const std::string& n, float dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->kind == Attribute::Kind::kFloat) return a->f;
  if (a->kind == Attribute::Kind::kInt) return static_cast<float>(a->i);
  return dflt;
}

std::string Node::attr_string(const std::string& n, const std::string& dflt) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::kString ? a->s : dflt;
}

std::vector<int64_t> Node::attr_ints(const std::string& n, std::vector<int64_t> dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->kind == Attribute::Kind::kInts) return a->ints;
  if (a->kind == Attribute::Kind::kInt) return {a->i};
  return dflt;
}

std::vector<float> Node::attr_floats(const std::string& n, std::vector<float> dflt) const {
  const Attribute* a = attr(n);
  if (!a) return dflt;
  if (a->kind == Attribute::Kind::kFloats) return a->floats;
  if (a->kind == Attribute::Kind::kFloat) return {a->f};
  return dflt;
}

const Graph* Node::attr_graph(const std::string& n) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::kGraph ? a->g.get() : nullptr;
}

const Tensor* Node::attr_tensor(const std::string& n) const {
  const Attribute* a = attr(n);
  return a && a->kind == Attribute::Kind::kTensor ? &a->t : nullptr;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [k, a] : attrs) {
    if (a.kind == Attribute::Kind::kGraph && a.g) out.push_back(a.g.get());
    if (a.kind == Attribute::Kind::kGraphs)
      for (const auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

std::string Node::label() const {
  std::string op = domain.empty() ? op_type : domain + "." + op_type;
  return op + " '" + name + "'";
}

Value* Graph::add_value(std::string n) {
  if (n.empty()) n = fresh_name("v");
  auto v = std::make_unique<Value>();
  v->name = n;
  v->onnx_name = n;
  v->graph = this;
  Value* raw = v.get();
  values.push_back(std::move(v));
  by_name_[raw->name] = raw;
  return raw;
}

Node* Graph::add_node(std::string op_type, std::string n) {
  auto node = std::make_unique<Node>();
  node->op_type = std::move(op_type);
  node->name = std::move(n);
  Node* raw = node.get();
  nodes.push_back(std::move(node));
  return raw;
}

Value* Graph::find_local_value(const std::string& n) const {
  auto it = by_name_.find(n);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::find_value(const std::string& n) const {
  for (const Graph* g = this; g; g = g->parent)
    if (Value* v = g->find_local_value(n)) return v;
  return nullptr;
}

void Graph::reindex() {
  by_name_.clear();
  for (auto& v : values) by_name_[v->name] = v.get();
}

std::vector<Value*> Graph::initializers() const {
  std::vector<Value*> out;
  for (auto& v : values)
    if (v->is_constant()) out.push_back(v.get());
  return out;
}

std::string Graph::fresh_name(const std::string& base) {
  std::string n;
  do {
    n = base + "__" + std::to_string(fresh_counter_++);
  } while (by_name_.count(n));
  return n;
}

void Graph::clone_into(Graph& out, std::map<const Value*, Value*>& map) const {
  out.name = name;
  out.fresh_counter_ = fresh_counter_;
  for (const auto& v : values) {
    auto c = std::make_unique<Value>(*v);
    c->graph = &out;
    c->producer = nullptr;  // set below, once the nodes exist
    map[v.get()] = c.get();
    out.by_name_[c->name] = c.get();
    out.values.push_back(std::move(c));
  }
  auto mapped = [&map](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    // Not in the map: an outer-scope value of a subgraph cloned alone; it keeps pointing there.
    return it == map.end() ? const_cast<Value*>(v) : it->second;
  };
  for (const auto& n : nodes) {
    auto c = std::make_unique<Node>(*n);
    for (Value*& in : c->inputs) in = mapped(in);
    for (Value*& o : c->outputs) o = mapped(o);
    for (size_t i = 0; i < c->outputs.size(); ++i)
      if (c->outputs[i] && c->outputs[i]->graph == &out) c->outputs[i]->producer = c.get();
    for (auto& [attr_name, a] : c->attrs) {
      if (a.g) {
        auto g = std::make_shared<Graph>();
        g->parent = &out;
        a.g->clone_into(*g, map);
        a.g = std::move(g);
      }
      for (auto& sub : a.graphs) {
        auto g = std::make_shared<Graph>();
        g->parent = &out;
        sub->clone_into(*g, map);
        sub = std::move(g);
      }
    }
    out.nodes.push_back(std::move(c));
  }
  for (const Value* v : inputs) out.inputs.push_back(mapped(v));
  for (const Value* v : outputs) out.outputs.push_back(mapped(v));
}

std::unique_ptr<Graph> Graph::clone() const {
  auto out = std::make_unique<Graph>();
  out->parent = parent;
  std::map<const Value*, Value*> map;
  clone_into(*out, map);
  return out;
}

std::unique_ptr<Model> Model::clone() const {
  auto m = std::make_unique<Model>(*this);
  m->graph = graph ? std::shared_ptr<Graph>(graph->clone()) : nullptr;
  return m;
}

int64_t Model::opset_for(const std::string& domain) const {
  std::string d = domain == "ai.onnx" ? "" : domain;
  for (const auto& o : opsets) {
    std::string od = o.domain == "ai.onnx" ? "" : o.domain;
    if (od == d) return o.version;
  }
  return 0;
}

}  // namespace ferry::ir
