// Reads the text that printer.cc writes (grammar in docs/ir.md), so pass tests can be .ir fixtures and
// printed graphs can be edited and fed back. Line-oriented: every construct is one line, except that a
// node with graph attributes is followed by its subgraph blocks (`graph ... ` up to `return`), in the
// order of its attributes.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "ir/graph.h"
#include "ir/text_format.h"

namespace ferry::ir {

namespace {

// One line with a cursor; every error names the line.
class Lexer {
 public:
  Lexer(std::string text, int line_no) : s_(std::move(text)), line_(line_no) {}

  Status error(const std::string& what) const {
    return Status::invalid("line " + std::to_string(line_) + ": " + what + " (at column " + std::to_string(pos_ + 1) + ")");
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= s_.size();
  }
  char peek() {
    skip_ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  Status expect(char c) {
    if (accept(c)) return Status();
    return error(std::string("expected '") + c + "'");
  }
  // A bare word of identifier characters (keywords, dtypes, op names).
  std::string word() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    return s_.substr(b, pos_ - b);
  }
  bool accept_word(const std::string& w) {
    skip_ws();
    size_t save = pos_;
    if (word() == w) return true;
    pos_ = save;
    return false;
  }
  Result<std::string> quoted() {
    if (!accept('"')) return error("expected a string");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) return error("unterminated string");
    ++pos_;
    return out;
  }
  // A value, node or graph name: quoted, or bare plain characters. A ':' ends a bare name when
  // whitespace follows it (that is the type separator in "%x: float32").
  Result<std::string> name() {
    if (peek() == '"') return quoted();
    size_t b = pos_;
    while (pos_ < s_.size() && plain_name_char(s_[pos_])) {
      if (s_[pos_] == ':' && (pos_ + 1 >= s_.size() || s_[pos_ + 1] == ' ' || s_[pos_ + 1] == '\t')) break;
      ++pos_;
    }
    if (pos_ == b) return error("expected a name");
    return s_.substr(b, pos_ - b);
  }
  // A number token as text (sign, digits, '.', exponent, inf/nan).
  std::string number_text() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.'))
      ++pos_;
    return s_.substr(b, pos_ - b);
  }
  Result<int64_t> integer() {
    std::string t = number_text();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno) return error("expected an integer, got '" + t + "'");
    return static_cast<int64_t>(v);
  }
  Result<double> real() {
    std::string t = number_text();
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0') return error("expected a number, got '" + t + "'");
    return v;
  }
  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }

 private:
  std::string s_;
  int line_;
  size_t pos_ = 0;
};

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Deterministic fill, seeded by the value's name: the same fixture always gives the same weights.
Tensor fill_tensor(DType dt, const std::vector<int64_t>& dims, const std::string& seed_name, double lo, double hi) {
  uint64_t state = 1469598103934665603ull;
  for (char c : seed_name) state = (state ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  Tensor d(DType::kFloat64, dims);
  double* p = d.data<double>();
  for (int64_t i = 0; i < d.numel(); ++i) {
    double u = static_cast<double>(splitmix(state) >> 11) / 9007199254740992.0;  // [0, 1)
    double v = lo + (hi - lo) * u;
    p[i] = is_floating(dt) ? v : std::floor(v);
  }
  return d.cast(dt);
}

struct ParsedTensorType {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
};

Result<DType> parse_dtype(Lexer& lx) {
  if (lx.accept('?')) return DType::kUndefined;
  std::string w = lx.word();
  auto dt = dtype_from_name(w);
  if (!dt) return lx.error("unknown element type '" + w + "'");
  return *dt;
}

Result<Shape> parse_dims(Lexer& lx) {
  Shape s;
  FERRY_RETURN_IF_ERROR(lx.expect('['));
  if (lx.accept(']')) return s;
  do {
    if (lx.accept('?')) {
      s.push_back(Dim());
    } else if (std::isdigit(static_cast<unsigned char>(lx.peek()))) {
      FERRY_ASSIGN_OR_RETURN(int64_t v, lx.integer());
      s.push_back(Dim(v));
    } else {
      FERRY_ASSIGN_OR_RETURN(std::string sym, lx.name());
      s.push_back(Dim::symbolic(sym));
    }
  } while (lx.accept(','));
  FERRY_RETURN_IF_ERROR(lx.expect(']'));
  return s;
}

// A value type: "float32[1,3,?,batch]", "float32" (rank unknown), "?", "seq(float32)", "optional(...)".
Status parse_type(Lexer& lx, Value& v) {
  size_t save = lx.pos();
  std::string w = lx.word();
  if (w == "seq" || w == "optional") {
    v.kind = w == "seq" ? ValueKind::kSequence : ValueKind::kOptional;
    FERRY_RETURN_IF_ERROR(lx.expect('('));
    FERRY_ASSIGN_OR_RETURN(v.dtype, parse_dtype(lx));
    if (lx.peek() == '[') {
      FERRY_ASSIGN_OR_RETURN(Shape s, parse_dims(lx));
      v.shape = s;
    }
    return lx.expect(')');
  }
  lx.set_pos(save);
  FERRY_ASSIGN_OR_RETURN(v.dtype, parse_dtype(lx));
  if (lx.peek() == '[') {
    FERRY_ASSIGN_OR_RETURN(Shape s, parse_dims(lx));
    v.shape = s;
  }
  return Status();
}

// "float32[2,3]" then optionally "= [1,2,...]" or "= uniform(lo, hi)"; no data: deterministic fill.
Result<Tensor> parse_tensor(Lexer& lx, const std::string& seed_name) {
  FERRY_ASSIGN_OR_RETURN(DType dt, parse_dtype(lx));
  if (dt == DType::kUndefined) return lx.error("a constant needs an element type");
  FERRY_ASSIGN_OR_RETURN(Shape s, parse_dims(lx));
  if (!is_static(s)) return lx.error("a constant needs static dims");
  std::vector<int64_t> dims = static_dims(s);
  auto n = checked_numel(dims, int64_t{1} << 26);  // 64 Mi elements: fixtures are small
  if (!n.ok()) return lx.error("constant too large: " + n.status().message());
  if (!lx.accept('=')) return fill_tensor(dt, dims, seed_name, is_floating(dt) ? -1.0 : 0.0, is_floating(dt) ? 1.0 : 10.0);
  if (lx.accept_word("uniform")) {
    FERRY_RETURN_IF_ERROR(lx.expect('('));
    FERRY_ASSIGN_OR_RETURN(double lo, lx.real());
    FERRY_RETURN_IF_ERROR(lx.expect(','));
    FERRY_ASSIGN_OR_RETURN(double hi, lx.real());
    FERRY_RETURN_IF_ERROR(lx.expect(')'));
    if (!(lo <= hi)) return lx.error("uniform(lo, hi) needs lo <= hi");
    return fill_tensor(dt, dims, seed_name, lo, hi);
  }
  FERRY_RETURN_IF_ERROR(lx.expect('['));
  std::vector<double> reals;
  std::vector<int64_t> ints;
  const bool integral = !is_floating(dt);
  if (lx.peek() != ']') {
    do {
      if (dt == DType::kBool && lx.accept_word("true")) {
        ints.push_back(1);
        continue;
      }
      if (dt == DType::kBool && lx.accept_word("false")) {
        ints.push_back(0);
        continue;
      }
      if (integral) {
        FERRY_ASSIGN_OR_RETURN(int64_t v, lx.integer());
        ints.push_back(v);
      } else {
        FERRY_ASSIGN_OR_RETURN(double v, lx.real());
        reals.push_back(v);
      }
    } while (lx.accept(','));
  }
  FERRY_RETURN_IF_ERROR(lx.expect(']'));
  const size_t count = integral ? ints.size() : reals.size();
  if (static_cast<int64_t>(count) != *n)
    return lx.error("constant of shape " + dims_to_string(dims) + " needs " + std::to_string(*n) + " values, got " +
                    std::to_string(count));
  if (integral) return Tensor::from_vector(ints, dims).cast(dt);
  return Tensor::from_vector(reals, dims).cast(dt);
}

class Parser {
 public:
  explicit Parser(const std::string& text) {
    std::istringstream in(text);
    std::string l;
    while (std::getline(in, l)) lines_.push_back(l);
  }

  Result<std::unique_ptr<Model>> parse() {
    auto model = std::make_unique<Model>();
    bool saw_graph = false;
    while (next_line()) {
      Lexer lx = lexer();
      if (lx.accept_word("opset")) {
        std::string domain;
        if (lx.peek() == '"') {
          FERRY_ASSIGN_OR_RETURN(domain, lx.quoted());
        } else {
          domain = lx.word();
        }
        if (domain == "ai.onnx") domain = "";
        FERRY_ASSIGN_OR_RETURN(int64_t v, lx.integer());
        if (!lx.at_end()) return lx.error("unexpected text after the opset");
        model->opsets.push_back({domain, v});
        ++cur_;
        continue;
      }
      if (saw_graph) return lx.error("text after the main graph");
      if (model->opsets.empty()) model->opsets = {{"", 17}, {"com.ferry", 1}};
      model_ = model.get();
      model->graph = std::make_shared<Graph>();
      FERRY_RETURN_IF_ERROR(parse_graph(*model->graph));
      saw_graph = true;
    }
    if (!saw_graph) return Status::invalid("line " + std::to_string(lines_.size()) + ": no graph in the text");
    return model;
  }

 private:
  // Moves cur_ to the next line that is not blank or a comment ('#' or '//' first); false at the end.
  bool next_line() {
    while (cur_ < lines_.size()) {
      Lexer lx(lines_[cur_], static_cast<int>(cur_ + 1));
      char c = lx.peek();
      size_t p = lx.pos();
      bool comment = c == '#' || (c == '/' && p + 1 < lines_[cur_].size() && lines_[cur_][p + 1] == '/');
      if (c != '\0' && !comment) return true;
      ++cur_;
    }
    return false;
  }
  Lexer lexer() const { return Lexer(lines_[cur_], static_cast<int>(cur_ + 1)); }
  Status line_error(const std::string& what) const {
    return Status::invalid("line " + std::to_string(cur_ + 1) + ": " + what);
  }

  Status parse_onnx_name(Lexer& lx, Value& v) {
    if (!lx.accept_word("onnx")) return Status();
    FERRY_RETURN_IF_ERROR(lx.expect('='));
    FERRY_ASSIGN_OR_RETURN(v.onnx_name, lx.quoted());
    return Status();
  }

  Result<Value*> new_value(Lexer& lx, Graph& g, const std::string& name) {
    if (g.find_local_value(name)) return lx.error("value '%" + name + "' is defined twice");
    return g.add_value(name);
  }

  Result<Value*> use_value(Lexer& lx, Graph& g) {
    FERRY_RETURN_IF_ERROR(lx.expect('%'));
    FERRY_ASSIGN_OR_RETURN(std::string name, lx.name());
    Value* v = g.find_value(name);
    if (!v) return lx.error("'%" + name + "' is not defined before this line");
    return v;
  }

  // graph NAME (decls) / const lines / node lines / return
  Status parse_graph(Graph& g) {
    if (++depth_ > kMaxDepth) return line_error("subgraphs nested deeper than " + std::to_string(kMaxDepth));
    Status st = parse_graph_body(g);
    --depth_;
    return st;
  }

  Status parse_graph_body(Graph& g) {
    if (!next_line()) return line_error("expected a graph");
    Lexer lx = lexer();
    if (!lx.accept_word("graph")) return lx.error("expected 'graph'");
    FERRY_ASSIGN_OR_RETURN(g.name, lx.name());
    FERRY_RETURN_IF_ERROR(lx.expect('('));
    if (!lx.accept(')')) {
      do {
        FERRY_RETURN_IF_ERROR(lx.expect('%'));
        FERRY_ASSIGN_OR_RETURN(std::string name, lx.name());
        FERRY_ASSIGN_OR_RETURN(Value * v, new_value(lx, g, name));
        if (lx.accept(':')) FERRY_RETURN_IF_ERROR(parse_type(lx, *v));
        FERRY_RETURN_IF_ERROR(parse_onnx_name(lx, *v));
        v->is_graph_input = true;
        g.inputs.push_back(v);
      } while (lx.accept(','));
      FERRY_RETURN_IF_ERROR(lx.expect(')'));
    }
    if (!lx.at_end()) return lx.error("unexpected text after the graph header");
    ++cur_;
    while (true) {
      if (!next_line()) return line_error("graph '" + g.name + "' has no 'return' line");
      Lexer body = lexer();
      if (body.accept_word("return")) {
        if (!body.at_end()) {
          do {
            FERRY_ASSIGN_OR_RETURN(Value * v, use_value(body, g));
            g.outputs.push_back(v);
          } while (body.accept(','));
        }
        if (!body.at_end()) return body.error("unexpected text after the graph outputs");
        ++cur_;
        return Status();
      }
      if (body.accept_word("const")) {
        FERRY_RETURN_IF_ERROR(parse_const(body, g));
        ++cur_;
        continue;
      }
      FERRY_RETURN_IF_ERROR(parse_node(body, g));
    }
  }

  Status parse_const(Lexer& lx, Graph& g) {
    FERRY_RETURN_IF_ERROR(lx.expect('%'));
    FERRY_ASSIGN_OR_RETURN(std::string name, lx.name());
    FERRY_RETURN_IF_ERROR(lx.expect(':'));
    // An initializer that is also a graph input gets its data here.
    Value* v = g.find_local_value(name);
    if (v && (!v->is_graph_input || v->is_constant())) return lx.error("value '%" + name + "' is defined twice");
    if (!v) v = g.add_value(name);
    FERRY_ASSIGN_OR_RETURN(v->initializer, parse_tensor(lx, name));
    v->dtype = v->initializer.dtype();
    v->shape = to_shape(v->initializer.dims());
    FERRY_RETURN_IF_ERROR(parse_onnx_name(lx, *v));
    if (!lx.at_end()) return lx.error("unexpected text after the constant");
    return Status();
  }

  Result<Attribute> parse_attr_value(Lexer& lx, const std::string& node_seed) {
    Attribute a;
    char c = lx.peek();
    if (c == '"') {
      a.kind = Attribute::Kind::kString;
      FERRY_ASSIGN_OR_RETURN(a.s, lx.quoted());
      return a;
    }
    if (c == '[') {
      FERRY_RETURN_IF_ERROR(lx.expect('['));
      char first = lx.peek();
      if (first == '"') {
        a.kind = Attribute::Kind::kStrings;
        do {
          FERRY_ASSIGN_OR_RETURN(std::string s, lx.quoted());
          a.strings.push_back(s);
        } while (lx.accept(','));
      } else {
        // ints unless any element is written as a float
        std::vector<std::string> toks;
        do toks.push_back(lx.number_text());
        while (lx.accept(','));
        bool is_float = false;
        for (const auto& t : toks) is_float = is_float || t.find_first_of(".eEin") != std::string::npos;
        a.kind = is_float ? Attribute::Kind::kFloats : Attribute::Kind::kInts;
        for (const auto& t : toks) {
          char* end = nullptr;
          if (is_float) a.floats.push_back(std::strtof(t.c_str(), &end));
          else a.ints.push_back(std::strtoll(t.c_str(), &end, 10));
          if (t.empty() || *end != '\0') return lx.error("bad list element '" + t + "'");
        }
      }
      FERRY_RETURN_IF_ERROR(lx.expect(']'));
      return a;
    }
    size_t save = lx.pos();
    std::string w = lx.word();
    if (w == "ints" || w == "floats" || w == "strings") {
      FERRY_RETURN_IF_ERROR(lx.expect('['));
      FERRY_RETURN_IF_ERROR(lx.expect(']'));
      a.kind = w == "ints" ? Attribute::Kind::kInts : w == "floats" ? Attribute::Kind::kFloats : Attribute::Kind::kStrings;
      return a;
    }
    if (w == "tensor") {
      a.kind = Attribute::Kind::kTensor;
      FERRY_ASSIGN_OR_RETURN(a.t, parse_tensor(lx, node_seed));
      return a;
    }
    if (w == "tensors") {
      a.kind = Attribute::Kind::kTensors;
      FERRY_RETURN_IF_ERROR(lx.expect('('));
      if (!lx.accept(')')) {
        do {
          FERRY_ASSIGN_OR_RETURN(Tensor t, parse_tensor(lx, node_seed + std::to_string(a.tensors.size())));
          a.tensors.push_back(t);
        } while (lx.accept(';'));
        FERRY_RETURN_IF_ERROR(lx.expect(')'));
      }
      return a;
    }
    if (w == "graph") {
      a.kind = Attribute::Kind::kGraph;
      return a;
    }
    if (w == "graphs") {
      a.kind = Attribute::Kind::kGraphs;
      FERRY_RETURN_IF_ERROR(lx.expect('('));
      FERRY_ASSIGN_OR_RETURN(int64_t n, lx.integer());
      FERRY_RETURN_IF_ERROR(lx.expect(')'));
      if (n < 0 || n > 1024) return lx.error("bad subgraph count");
      a.graphs.resize(n);
      return a;
    }
    if (w == "type") {
      a.kind = Attribute::Kind::kType;
      Value tmp;
      FERRY_RETURN_IF_ERROR(parse_type(lx, tmp));
      a.type_kind = tmp.kind;
      a.type_dtype = tmp.dtype;
      return a;
    }
    lx.set_pos(save);
    std::string t = lx.number_text();
    if (t.empty()) return lx.error("expected an attribute value");
    char* end = nullptr;
    if (t.find_first_of(".eEin") != std::string::npos) {
      a.kind = Attribute::Kind::kFloat;
      a.f = std::strtof(t.c_str(), &end);
    } else {
      a.kind = Attribute::Kind::kInt;
      a.i = std::strtoll(t.c_str(), &end, 10);
    }
    if (*end != '\0') return lx.error("bad attribute value '" + t + "'");
    return a;
  }

  Status parse_node(Lexer& lx, Graph& g) {
    // Outputs are created after the inputs are resolved, so a node cannot consume its own output.
    struct OutDecl {
      bool omitted = false;
      Value proto;
      std::string name;
    };
    std::vector<OutDecl> outs;
    if (lx.accept('(')) {
      FERRY_RETURN_IF_ERROR(lx.expect(')'));
    } else {
      do {
        OutDecl d;
        if (lx.accept('_')) {
          d.omitted = true;
        } else {
          FERRY_RETURN_IF_ERROR(lx.expect('%'));
          FERRY_ASSIGN_OR_RETURN(d.name, lx.name());
          if (lx.accept(':')) FERRY_RETURN_IF_ERROR(parse_type(lx, d.proto));
          FERRY_RETURN_IF_ERROR(parse_onnx_name(lx, d.proto));
        }
        outs.push_back(std::move(d));
      } while (lx.accept(','));
    }
    FERRY_RETURN_IF_ERROR(lx.expect('='));
    std::string op = lx.word();
    if (op.empty()) return lx.error("expected an op type");
    std::string domain;
    size_t dot = op.rfind('.');
    if (dot != std::string::npos) {
      domain = op.substr(0, dot);
      op = op.substr(dot + 1);
      if (domain == "ai.onnx") domain.clear();
    }
    int opset = -1;
    if (lx.accept('@')) {
      FERRY_ASSIGN_OR_RETURN(int64_t v, lx.integer());
      opset = static_cast<int>(v);
    }
    Node* n = g.add_node(op, "");
    n->domain = domain;
    if (opset < 0) {
      int64_t m = model_->opset_for(domain);
      if (m == 0 && domain == "com.ferry") {
        model_->opsets.push_back({"com.ferry", 1});
        m = 1;
      }
      if (m == 0) return lx.error("no opset for domain '" + domain + "' (add an 'opset' line or write " + op + "@N)");
      opset = static_cast<int>(m);
    }
    n->opset = opset;
    FERRY_RETURN_IF_ERROR(lx.expect('('));
    if (!lx.accept(')')) {
      do {
        if (lx.accept('_')) {
          n->inputs.push_back(nullptr);
          continue;
        }
        FERRY_ASSIGN_OR_RETURN(Value * v, use_value(lx, g));
        n->inputs.push_back(v);
      } while (lx.accept(','));
      FERRY_RETURN_IF_ERROR(lx.expect(')'));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].omitted) {
        n->outputs.push_back(nullptr);
        continue;
      }
      FERRY_ASSIGN_OR_RETURN(Value * v, new_value(lx, g, outs[i].name));
      v->kind = outs[i].proto.kind;
      v->dtype = outs[i].proto.dtype;
      v->shape = outs[i].proto.shape;
      if (!outs[i].proto.onnx_name.empty()) v->onnx_name = outs[i].proto.onnx_name;
      v->producer = n;
      v->producer_output = static_cast<int>(i);
      n->outputs.push_back(v);
    }
    if (lx.accept('{')) {
      if (!lx.accept('}')) {
        do {
          FERRY_ASSIGN_OR_RETURN(std::string key, lx.name());
          FERRY_RETURN_IF_ERROR(lx.expect('='));
          FERRY_ASSIGN_OR_RETURN(Attribute a, parse_attr_value(lx, key));
          if (n->attrs.count(key)) return lx.error("attribute '" + key + "' given twice");
          n->attrs[key] = std::move(a);
        } while (lx.accept(','));
        FERRY_RETURN_IF_ERROR(lx.expect('}'));
      }
    }
    bool has_from = false;
    if (lx.accept('#') && !lx.at_end()) {
      FERRY_ASSIGN_OR_RETURN(n->name, lx.name());
      has_from = lx.accept_word("from");
      while (has_from && !lx.at_end()) {
        FERRY_ASSIGN_OR_RETURN(std::string p, lx.name());
        n->provenance.push_back(p);
      }
    }
    if (!lx.at_end()) return lx.error("unexpected text after the node");
    if (!has_from) n->provenance = {n->name};
    ++cur_;
    // Subgraph blocks follow, one per graph attribute, in attribute order.
    for (auto& [key, a] : n->attrs) {
      if (a.kind == Attribute::Kind::kGraph) {
        a.g = std::make_shared<Graph>();
        a.g->parent = &g;
        FERRY_RETURN_IF_ERROR(parse_graph(*a.g));
      } else if (a.kind == Attribute::Kind::kGraphs) {
        for (auto& sg : a.graphs) {
          sg = std::make_shared<Graph>();
          sg->parent = &g;
          FERRY_RETURN_IF_ERROR(parse_graph(*sg));
        }
      }
    }
    return Status();
  }

  static constexpr int kMaxDepth = 64;
  std::vector<std::string> lines_;
  size_t cur_ = 0;
  int depth_ = 0;
  Model* model_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<Model>> parse_model(const std::string& text) {
  Parser p(text);
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<Model> m, p.parse());
  FERRY_RETURN_IF_ERROR(verify(*m->graph));
  return m;
}

}  // namespace ferry::ir
