// A text form of the graph, one node per line, for `ferry inspect --graph`, pass tests and debugging.
#include <sstream>

#include "ir/graph.h"

namespace ferry::ir {

namespace {
std::string attr_text(const Attribute& a) {
  std::ostringstream o;
  switch (a.kind) {
    case Attribute::Kind::kFloat: o << a.f; break;
    case Attribute::Kind::kInt: o << a.i; break;
    case Attribute::Kind::kString: o << '"' << a.s << '"'; break;
    case Attribute::Kind::kTensor: o << "tensor " << a.t.describe(); break;
    case Attribute::Kind::kGraph: o << "graph"; break;
    case Attribute::Kind::kFloats:
      o << "[";
      for (size_t i = 0; i < a.floats.size(); ++i) o << (i ? "," : "") << a.floats[i];
      o << "]";
      break;
    case Attribute::Kind::kInts:
      o << "[";
      for (size_t i = 0; i < a.ints.size(); ++i) o << (i ? "," : "") << a.ints[i];
      o << "]";
      break;
    case Attribute::Kind::kStrings: o << "strings[" << a.strings.size() << "]"; break;
    case Attribute::Kind::kTensors: o << "tensors[" << a.tensors.size() << "]"; break;
    case Attribute::Kind::kGraphs: o << "graphs[" << a.graphs.size() << "]"; break;
    case Attribute::Kind::kType: o << "type " << dtype_name(a.type_dtype); break;
  }
  return o.str();
}

void print_into(const Graph& g, std::ostringstream& o, const std::string& indent) {
  o << indent << "graph " << g.name << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    o << (i ? ", " : "") << "%" << g.inputs[i]->name << ": " << g.inputs[i]->type_string();
  o << ")\n";
  for (const auto& v : g.values)
    if (v->is_constant() && !v->is_graph_input)
      o << indent << "  const %" << v->name << ": " << v->initializer.describe() << "\n";
  for (const auto& n : g.nodes) {
    o << indent << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      o << (i ? ", " : "");
      if (n->outputs[i]) o << "%" << n->outputs[i]->name << ": " << n->outputs[i]->type_string();
      else o << "_";
    }
    o << " = " << (n->domain.empty() ? "" : n->domain + ".") << n->op_type << "(";
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      o << (i ? ", " : "");
      if (n->inputs[i]) o << "%" << n->inputs[i]->name;
      else o << "_";
    }
    o << ")";
    bool first = true;
    for (const auto& [k, a] : n->attrs) {
      o << (first ? " {" : ", ") << k << "=" << attr_text(a);
      first = false;
    }
    if (!first) o << "}";
    o << "  # " << n->name;
    if (n->provenance.size() > 1 || (n->provenance.size() == 1 && n->provenance[0] != n->name)) {
      o << " from";
      for (const auto& p : n->provenance) o << " " << p;
    }
    o << "\n";
    for (const auto& [k, a] : n->attrs) {
      if (a.kind == Attribute::Kind::kGraph && a.g) print_into(*a.g, o, indent + "    ");
      if (a.kind == Attribute::Kind::kGraphs)
        for (const auto& sg : a.graphs) print_into(*sg, o, indent + "    ");
    }
  }
  o << indent << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) o << (i ? ", " : "") << "%" << g.outputs[i]->name;
  o << "\n";
}
}  // namespace

std::string print_graph(const Graph& g) {
  std::ostringstream o;
  print_into(g, o, "");
  return o.str();
}

}  // namespace ferry::ir
