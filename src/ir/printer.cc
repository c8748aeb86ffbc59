// A text form of the graph, one node per line, for `ferry inspect --graph`, pass tests and debugging.
// ir/parser.cc reads the same text back (docs/ir.md describes the grammar): everything round-trips
// except the data of constants with more than kMaxLiteral elements, which print as type only (the parser
// fills those deterministically).
#include <charconv>
#include <sstream>

#include "ir/graph.h"
#include "ir/text_format.h"

namespace ferry::ir {

namespace {
constexpr int64_t kMaxLiteral = 64;

// A name as a token: bare when it only has plain characters (and does not end in ':', which the
// parser reads as the type separator), otherwise quoted.
std::string name_token(const std::string& n) {
  bool plain = !n.empty() && n != "from" && n.back() != ':';
  for (char c : n) plain = plain && plain_name_char(c);
  if (plain) return n;
  return quote_ir_string(n);
}

std::string num_text(double v, bool single) {
  char buf[64];
  auto r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)) : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  // Floats always carry a '.', an exponent or a word, so a reader tells them from ints.
  if (s.find_first_of(".ein") == std::string::npos) s += ".0";
  return s;
}

std::string tensor_text(const Tensor& t) {
  std::ostringstream o;
  o << dtype_name(t.dtype()) << dims_to_string(t.dims());
  if (t.numel() > kMaxLiteral || !t.is_plain()) return o.str();
  o << " = [";
  for (int64_t i = 0; i < t.numel(); ++i) {
    o << (i ? "," : "");
    if (is_floating(t.dtype())) o << num_text(t.as_double(i), t.dtype() != DType::kFloat64);
    else if (t.dtype() == DType::kUInt64) o << static_cast<uint64_t>(t.as_int64(i));
    else o << t.as_int64(i);
  }
  o << "]";
  return o.str();
}

std::string attr_text(const Attribute& a) {
  std::ostringstream o;
  switch (a.kind) {
    case Attribute::Kind::kFloat: o << num_text(a.f, true); break;
    case Attribute::Kind::kInt: o << a.i; break;
    case Attribute::Kind::kString: o << quote_ir_string(a.s); break;
    case Attribute::Kind::kTensor: o << "tensor " << tensor_text(a.t); break;
    case Attribute::Kind::kGraph: o << "graph"; break;
    case Attribute::Kind::kFloats:
      if (a.floats.empty()) return "floats[]";
      o << "[";
      for (size_t i = 0; i < a.floats.size(); ++i) o << (i ? "," : "") << num_text(a.floats[i], true);
      o << "]";
      break;
    case Attribute::Kind::kInts:
      if (a.ints.empty()) return "ints[]";
      o << "[";
      for (size_t i = 0; i < a.ints.size(); ++i) o << (i ? "," : "") << a.ints[i];
      o << "]";
      break;
    case Attribute::Kind::kStrings:
      if (a.strings.empty()) return "strings[]";
      o << "[";
      for (size_t i = 0; i < a.strings.size(); ++i) o << (i ? "," : "") << quote_ir_string(a.strings[i]);
      o << "]";
      break;
    case Attribute::Kind::kTensors:
      o << "tensors(";
      for (size_t i = 0; i < a.tensors.size(); ++i) o << (i ? "; " : "") << tensor_text(a.tensors[i]);
      o << ")";
      break;
    case Attribute::Kind::kGraphs: o << "graphs(" << a.graphs.size() << ")"; break;
    case Attribute::Kind::kType: {
      std::string elem(dtype_name(a.type_dtype));
      if (a.type_kind == ValueKind::kSequence) o << "type seq(" << elem << ")";
      else if (a.type_kind == ValueKind::kOptional) o << "type optional(" << elem << ")";
      else o << "type " << elem;
      break;
    }
  }
  return o.str();
}

// Like Value::type_string, but an unknown rank prints as the bare element type ("float32"), so it
// cannot be mistaken for a rank-1 shape with an unknown dim ("float32[?]").
std::string type_text(const Value& v) {
  std::string elem = v.dtype == DType::kUndefined ? "?" : std::string(dtype_name(v.dtype));
  std::string shp = v.shape ? shape_to_string(*v.shape) : "";
  switch (v.kind) {
    case ValueKind::kSequence: return "seq(" + elem + ")";
    case ValueKind::kOptional: return "optional(" + elem + shp + ")";
    default: return elem + shp;
  }
}

std::string value_decl(const Value& v) {
  std::string s = "%" + name_token(v.name) + ": " + type_text(v);
  if (!v.onnx_name.empty() && v.onnx_name != v.name) s += " onnx=" + quote_ir_string(v.onnx_name);
  return s;
}

struct PrintCtx {
  const Model* model = nullptr;  // when set, node opsets that differ from the model's print as Op@N
};

void print_into(const Graph& g, std::ostringstream& o, const std::string& indent, const PrintCtx& pc) {
  o << indent << "graph " << name_token(g.name.empty() ? "main" : g.name) << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i) o << (i ? ", " : "") << value_decl(*g.inputs[i]);
  o << ")\n";
  for (const auto& v : g.values)
    if (v->is_constant()) {
      o << indent << "  const %" << name_token(v->name) << ": " << tensor_text(v->initializer);
      if (!v->onnx_name.empty() && v->onnx_name != v->name) o << " onnx=" << quote_ir_string(v->onnx_name);
      o << "\n";
    }
  for (const auto& n : g.nodes) {
    o << indent << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      o << (i ? ", " : "");
      if (n->outputs[i]) o << value_decl(*n->outputs[i]);
      else o << "_";
    }
    if (n->outputs.empty()) o << "()";
    o << " = " << (n->domain.empty() ? "" : n->domain + ".") << n->op_type;
    if (pc.model && n->opset != pc.model->opset_for(n->domain)) o << "@" << n->opset;
    o << "(";
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      o << (i ? ", " : "");
      if (n->inputs[i]) o << "%" << name_token(n->inputs[i]->name);
      else o << "_";
    }
    o << ")";
    bool first = true;
    for (const auto& [k, a] : n->attrs) {
      o << (first ? " {" : ", ") << name_token(k) << "=" << attr_text(a);
      first = false;
    }
    if (!first) o << "}";
    o << "  # " << (n->name.empty() ? "\"\"" : name_token(n->name));
    if (n->provenance.size() != 1 || n->provenance[0] != n->name) {
      o << " from";
      for (const auto& p : n->provenance) o << " " << (p.empty() ? "\"\"" : name_token(p));
    }
    o << "\n";
    for (const auto& [k, a] : n->attrs) {
      if (a.kind == Attribute::Kind::kGraph && a.g) print_into(*a.g, o, indent + "    ", pc);
      if (a.kind == Attribute::Kind::kGraphs)
        for (const auto& sg : a.graphs) print_into(*sg, o, indent + "    ", pc);
    }
  }
  o << indent << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) o << (i ? ", " : "") << "%" << name_token(g.outputs[i]->name);
  o << "\n";
}
}  // namespace

std::string quote_ir_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + "\"";
}

std::string print_graph(const Graph& g) {
  std::ostringstream o;
  print_into(g, o, "", PrintCtx{});
  return o.str();
}

std::string print_model(const Model& m) {
  std::ostringstream o;
  for (const auto& op : m.opsets) o << "opset " << quote_ir_string(op.domain) << " " << op.version << "\n";
  if (m.graph) print_into(*m.graph, o, "", PrintCtx{&m});
  return o.str();
}

}  // namespace ferry::ir
