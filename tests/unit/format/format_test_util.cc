#include "unit/format/format_test_util.h"

#include <unistd.h>

#include <cstring>
#include <map>

#include "onnx/onnx_pb.h"

namespace ferry::format::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "ferry_format_test_XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* p = ::mkdtemp(buf.data());
  path = p ? fs::path(p) : fs::temp_directory_path();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

namespace {

Tensor iota(DType dt, std::vector<int64_t> dims) {
  Tensor t(dt, std::move(dims));
  auto* b = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) b[i] = static_cast<uint8_t>(i * 37 + static_cast<int>(dt));
  if (dt == DType::kBool)
    for (size_t i = 0; i < t.nbytes(); ++i) b[i] &= 1;
  return t;
}

ir::Attribute attr(ir::Attribute::Kind k) {
  ir::Attribute a;
  a.kind = k;
  return a;
}

}  // namespace

std::unique_ptr<ir::Model> kitchen_sink_model() {
  using K = ir::Attribute::Kind;
  auto m = std::make_unique<ir::Model>();
  m->graph = std::make_shared<ir::Graph>();
  m->opsets = {{"", 17}, {"com.ferry", 1}, {"test.domain", 3}};
  m->ir_version = 8;
  m->producer_name = "pytorch";
  m->producer_version = "1.13.1";
  m->doc_string = "kitchen sink";
  m->metadata = {{"author", "ferry tests"}, {"empty", ""}};
  ir::Graph& g = *m->graph;
  g.name = "main";

  ir::Value* x = g.add_value("x");
  x->dtype = DType::kFloat32;
  x->shape = Shape{Dim::symbolic("batch"), Dim(3), Dim(), Dim(0)};
  x->is_graph_input = true;
  g.inputs.push_back(x);
  ir::Value* seq = g.add_value("seq_in");
  seq->kind = ir::ValueKind::kSequence;
  seq->dtype = DType::kInt64;
  seq->is_graph_input = true;
  g.inputs.push_back(seq);
  ir::Value* opt = g.add_value("opt_in");
  opt->kind = ir::ValueKind::kOptional;
  opt->dtype = DType::kBFloat16;
  opt->shape = Shape{Dim(2)};
  opt->is_graph_input = true;
  g.inputs.push_back(opt);

  // One constant per dtype, one of them also a graph input (an overridable initializer), one empty.
  std::vector<ir::Value*> consts;
  const DType all[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt8,
                       DType::kInt16,   DType::kInt32,   DType::kInt64,    DType::kUInt8,   DType::kUInt16,
                       DType::kUInt32,  DType::kUInt64,  DType::kBool};
  int k = 0;
  for (DType dt : all) {
    ir::Value* c = g.add_value("c_" + std::string(dtype_name(dt)));
    c->dtype = dt;
    c->initializer = iota(dt, {2, static_cast<int64_t>(3 + k++)});
    c->shape = to_shape(c->initializer.dims());
    c->onnx_name = "onnx::" + c->name;
    consts.push_back(c);
  }
  consts[0]->is_graph_input = true;
  g.inputs.push_back(consts[0]);
  ir::Value* empty = g.add_value("c_empty");
  empty->dtype = DType::kFloat32;
  empty->initializer = Tensor(DType::kFloat32, {0, 5});
  empty->shape = to_shape({0, 5});
  ir::Value* scalar = g.add_value("c_scalar");
  scalar->dtype = DType::kInt64;
  scalar->initializer = Tensor::scalar<int64_t>(-7);
  scalar->shape = Shape{};

  ir::Node* n = g.add_node("Everything", "everything");
  n->domain = "test.domain";
  n->opset = 3;
  n->provenance = {"onnx_a", "onnx_b", "onnx_c"};
  n->inputs = {x, nullptr, consts[3], seq, opt, empty, scalar};
  ir::Value* y = g.add_value("y");
  y->dtype = DType::kFloat32;  // rank unknown
  y->onnx_name = "y_onnx";
  ir::Value* y2 = g.add_value("y2");
  y2->kind = ir::ValueKind::kSequence;
  y2->dtype = DType::kFloat16;
  n->outputs = {y, nullptr, y2};
  y->producer = n;
  y->producer_output = 0;
  y2->producer = n;
  y2->producer_output = 2;

  auto f = attr(K::kFloat);
  f.f = -1.5e-3f;
  n->attrs["f"] = f;
  auto i = attr(K::kInt);
  i.i = -(int64_t{1} << 40);
  n->attrs["i"] = i;
  auto s = attr(K::kString);
  s.s = std::string("bytes\0with nul", 14);
  n->attrs["s"] = s;
  auto t = attr(K::kTensor);
  t.t = iota(DType::kInt32, {3});
  n->attrs["t"] = t;
  auto fs_ = attr(K::kFloats);
  fs_.floats = {1, -2, 3.25f};
  n->attrs["floats"] = fs_;
  auto is = attr(K::kInts);
  is.ints = {0, -1, int64_t{1} << 62};
  n->attrs["ints"] = is;
  auto ss = attr(K::kStrings);
  ss.strings = {"a", "", "ccc"};
  n->attrs["strings"] = ss;
  auto ts = attr(K::kTensors);
  ts.tensors = {iota(DType::kUInt8, {4}), consts[1]->initializer};  // the second shares a buffer
  n->attrs["tensors"] = ts;
  auto ty = attr(K::kType);
  ty.type_kind = ir::ValueKind::kOptional;
  ty.type_dtype = DType::kFloat16;
  n->attrs["type"] = ty;
  auto empty_ints = attr(K::kInts);
  n->attrs["empty_ints"] = empty_ints;

  // A subgraph that reads an outer value and holds a nested subgraph reading two levels up.
  auto body = std::make_shared<ir::Graph>();
  body->name = "body";
  body->parent = &g;
  ir::Value* bi = body->add_value("b_in");
  bi->dtype = DType::kFloat32;
  bi->shape = Shape{Dim::symbolic("n")};
  bi->is_graph_input = true;
  body->inputs.push_back(bi);
  ir::Value* bc = body->add_value("b_const");
  bc->dtype = DType::kInt8;
  bc->initializer = iota(DType::kInt8, {5});
  bc->shape = to_shape({5});
  ir::Node* bn = body->add_node("Add", "body_add");
  bn->opset = 17;
  bn->provenance = {"body_add"};
  bn->inputs = {bi, consts[0]};
  ir::Value* bo = body->add_value("b_out");
  bo->dtype = DType::kFloat32;
  bn->outputs = {bo};
  bo->producer = bn;
  bo->producer_output = 0;
  auto inner = std::make_shared<ir::Graph>();
  inner->name = "inner";
  inner->parent = body.get();
  ir::Node* in_n = inner->add_node("Mul", "inner_mul");
  in_n->opset = 17;
  in_n->inputs = {bo, x};  // one level up, two levels up
  ir::Value* io = inner->add_value("i_out");
  in_n->outputs = {io};
  io->producer = in_n;
  io->producer_output = 0;
  inner->outputs = {io};
  ir::Node* holder = body->add_node("Holder", "holder");
  holder->domain = "test.domain";
  auto ga = attr(K::kGraph);
  ga.g = inner;
  holder->attrs["inner"] = ga;
  body->outputs = {bo, consts[2]};  // an output from the outer scope

  auto g1 = attr(K::kGraph);
  g1.g = body;
  n->attrs["g"] = g1;
  auto empty_body = std::make_shared<ir::Graph>();
  empty_body->name = "empty";
  empty_body->parent = &g;
  empty_body->outputs = {x};
  auto gs = attr(K::kGraphs);
  gs.graphs = {empty_body};
  n->attrs["graphs"] = gs;

  g.outputs = {y, y2, consts[4]};
  return m;
}

namespace {

void tensor_type(onnx::ValueInfoProto* v, const std::string& name, int elem, std::vector<std::string> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* sh = tt->mutable_shape();
  for (const auto& d : dims) {
    if (!d.empty() && (d[0] >= '0' && d[0] <= '9')) sh->add_dim()->set_dim_value(std::stoll(d));
    else sh->add_dim()->set_dim_param(d);
  }
}

onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                      std::vector<std::string> out, const std::string& name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void floats_init(onnx::GraphProto* g, const std::string& name, std::vector<float> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (float f : v) t->add_float_data(f);
}

}  // namespace

std::string runnable_onnx_model(bool cond_input) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("ferry-tests");
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("runnable");
  tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {"batch", "4"});
  if (cond_input) {
    tensor_type(g->add_input(), "c", onnx::TensorProto::BOOL, {});
  } else {
    auto* c = g->add_initializer();
    c->set_name("c");
    c->set_data_type(onnx::TensorProto::BOOL);
    c->add_int32_data(0);
  }
  floats_init(g, "w", {0.5f, -1.25f, 3.0f, 1e-3f});
  {
    auto* h = g->add_initializer();
    h->set_name("h");
    h->set_data_type(onnx::TensorProto::FLOAT16);
    h->add_dims(4);
    const uint16_t bits[4] = {0x3c00, 0xc000, 0x3555, 0x7bff};  // 1, -2, ~0.333, 65504
    h->set_raw_data(std::string(reinterpret_cast<const char*>(bits), sizeof bits));
    auto* n = g->add_initializer();
    n->set_name("trip");
    n->set_data_type(onnx::TensorProto::INT64);
    n->add_int64_data(3);
    auto* idx = g->add_initializer();
    idx->set_name("idx");
    idx->set_data_type(onnx::TensorProto::INT64);
    idx->add_int64_data(1);
  }
  node(g, "Add", {"x", "w"}, {"a"}, "add");
  auto* cast = node(g, "Cast", {"h"}, {"hf"}, "cast");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  node(g, "Mul", {"a", "hf"}, {"b"}, "mul");

  auto* iff = node(g, "If", {"c"}, {"y_if"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* at = iff->add_attribute();
    at->set_name(branch);
    at->set_type(onnx::AttributeProto::GRAPH);
    auto* sg = at->mutable_g();
    sg->set_name(branch);
    bool then = std::string(branch) == "then_branch";
    node(sg, then ? "Relu" : "Neg", {"b"}, {then ? "t_out" : "e_out"}, then ? "relu" : "neg");
    tensor_type(sg->add_output(), then ? "t_out" : "e_out", onnx::TensorProto::FLOAT, {"batch", "4"});
  }

  auto* loop = node(g, "Loop", {"trip", "", "y_if"}, {"y_loop"}, "loop");
  auto* body_attr = loop->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* body = body_attr->mutable_g();
  body->set_name("body");
  tensor_type(body->add_input(), "i", onnx::TensorProto::INT64, {});
  tensor_type(body->add_input(), "cond", onnx::TensorProto::BOOL, {});
  tensor_type(body->add_input(), "v", onnx::TensorProto::FLOAT, {"batch", "4"});
  node(body, "Identity", {"cond"}, {"cond_out"}, "cond_id");
  node(body, "Mul", {"v", "w"}, {"vw"}, "body_mul");
  node(body, "Add", {"vw", "hf"}, {"v_out"}, "body_add");
  tensor_type(body->add_output(), "cond_out", onnx::TensorProto::BOOL, {});
  tensor_type(body->add_output(), "v_out", onnx::TensorProto::FLOAT, {"batch", "4"});

  node(g, "SequenceConstruct", {"y_loop", "b"}, {"s"}, "seq");
  node(g, "SequenceAt", {"s", "idx"}, {"y_seq"}, "seq_at");
  tensor_type(g->add_output(), "y_loop", onnx::TensorProto::FLOAT, {"batch", "4"});
  tensor_type(g->add_output(), "y_seq", onnx::TensorProto::FLOAT, {"batch", "4"});
  auto* so = g->add_output();
  so->set_name("s");
  so->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

namespace {

struct Differ {
  std::ostringstream out;
  bool diff = false;

  bool fail(const std::string& where, const std::string& what) {
    if (!diff) out << where << ": " << what;
    diff = true;
    return false;
  }

  bool tensors(const Tensor& a, const Tensor& b, const std::string& where) {
    if (a.defined() != b.defined()) return fail(where, "one tensor is undefined");
    if (!a.defined()) return true;
    if (!a.same_as(b)) return fail(where, "tensors differ: " + a.describe() + " vs " + b.describe());
    return true;
  }

  static std::string shape_str(const std::optional<Shape>& s) { return s ? shape_to_string(*s) : "(unknown rank)"; }

  bool values(const ir::Value& a, const ir::Value& b, const std::string& where) {
    if (a.name != b.name) return fail(where, "name " + a.name + " vs " + b.name);
    if (a.kind != b.kind || a.dtype != b.dtype) return fail(where, "type " + a.type_string() + " vs " + b.type_string());
    if (shape_str(a.shape) != shape_str(b.shape) || a.shape.has_value() != b.shape.has_value())
      return fail(where, "shape " + shape_str(a.shape) + " vs " + shape_str(b.shape));
    if (a.shape)
      for (size_t i = 0; i < a.shape->size(); ++i)
        if (!((*a.shape)[i] == (*b.shape)[i])) return fail(where, "dim " + std::to_string(i));
    if (a.onnx_name != b.onnx_name) return fail(where, "onnx_name " + a.onnx_name + " vs " + b.onnx_name);
    if (a.is_graph_input != b.is_graph_input) return fail(where, "is_graph_input");
    if (a.producer_output != b.producer_output) return fail(where, "producer_output");
    if ((a.producer == nullptr) != (b.producer == nullptr)) return fail(where, "producer");
    if (a.producer && a.producer->name != b.producer->name) return fail(where, "producer name");
    return tensors(a.initializer, b.initializer, where + " initializer");
  }

  static std::string ref(const ir::Value* v) {
    return v ? v->name + "@" + (v->graph ? v->graph->name : std::string("?")) : std::string("_");
  }

  bool attrs(const ir::Attribute& a, const ir::Attribute& b, const std::string& where) {
    if (a.kind != b.kind) return fail(where, "kind");
    if (std::memcmp(&a.f, &b.f, sizeof a.f) != 0 || a.i != b.i || a.s != b.s) return fail(where, "scalar field");
    if (a.floats.size() != b.floats.size() ||
        (!a.floats.empty() && std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * 4) != 0))
      return fail(where, "floats");
    if (a.ints != b.ints || a.strings != b.strings) return fail(where, "ints/strings");
    if (a.type_kind != b.type_kind || a.type_dtype != b.type_dtype) return fail(where, "type");
    if (!tensors(a.t, b.t, where + " t")) return false;
    if (a.tensors.size() != b.tensors.size()) return fail(where, "tensor count");
    for (size_t i = 0; i < a.tensors.size(); ++i)
      if (!tensors(a.tensors[i], b.tensors[i], where + " tensor " + std::to_string(i))) return false;
    if ((a.g == nullptr) != (b.g == nullptr)) return fail(where, "graph presence");
    if (a.g && !graphs(*a.g, *b.g, where + " g")) return false;
    if (a.graphs.size() != b.graphs.size()) return fail(where, "graph count");
    for (size_t i = 0; i < a.graphs.size(); ++i)
      if (!graphs(*a.graphs[i], *b.graphs[i], where + " graph " + std::to_string(i))) return false;
    return true;
  }

  bool graphs(const ir::Graph& a, const ir::Graph& b, const std::string& where0) {
    const std::string where = where0 + " graph '" + a.name + "'";
    if (a.name != b.name) return fail(where, "name " + b.name);
    if ((a.parent == nullptr) != (b.parent == nullptr)) return fail(where, "parent");
    if (a.parent && a.parent->name != b.parent->name) return fail(where, "parent name");
    if (a.values.size() != b.values.size()) return fail(where, "value count");
    for (size_t i = 0; i < a.values.size(); ++i)
      if (!values(*a.values[i], *b.values[i], where + " value " + std::to_string(i))) return false;
    if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return fail(where, "io count");
    for (size_t i = 0; i < a.inputs.size(); ++i)
      if (ref(a.inputs[i]) != ref(b.inputs[i])) return fail(where, "input " + std::to_string(i));
    for (size_t i = 0; i < a.outputs.size(); ++i)
      if (ref(a.outputs[i]) != ref(b.outputs[i])) return fail(where, "output " + std::to_string(i));
    if (a.nodes.size() != b.nodes.size()) return fail(where, "node count");
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      const ir::Node& x = *a.nodes[i];
      const ir::Node& y = *b.nodes[i];
      const std::string w = where + " node " + std::to_string(i) + " (" + x.label() + ")";
      if (x.name != y.name || x.op_type != y.op_type || x.domain != y.domain || x.opset != y.opset)
        return fail(w, "header " + y.label() + " opset " + std::to_string(y.opset));
      if (x.provenance != y.provenance) return fail(w, "provenance");
      if (x.inputs.size() != y.inputs.size() || x.outputs.size() != y.outputs.size()) return fail(w, "io count");
      for (size_t j = 0; j < x.inputs.size(); ++j)
        if (ref(x.inputs[j]) != ref(y.inputs[j])) return fail(w, "input " + std::to_string(j) + " " + ref(y.inputs[j]));
      for (size_t j = 0; j < x.outputs.size(); ++j)
        if (ref(x.outputs[j]) != ref(y.outputs[j])) return fail(w, "output " + std::to_string(j));
      if (x.attrs.size() != y.attrs.size()) return fail(w, "attribute count");
      for (const auto& [k, at] : x.attrs) {
        auto it = y.attrs.find(k);
        if (it == y.attrs.end()) return fail(w, "attribute " + k + " missing");
        if (!attrs(at, it->second, w + " attribute " + k)) return false;
      }
    }
    return true;
  }
};

}  // namespace

std::string diff_models(const ir::Model& a, const ir::Model& b) {
  Differ d;
  if (a.ir_version != b.ir_version || a.producer_name != b.producer_name || a.producer_version != b.producer_version ||
      a.doc_string != b.doc_string || a.metadata != b.metadata)
    return "model header differs";
  if (a.opsets.size() != b.opsets.size()) return "opset count differs";
  for (size_t i = 0; i < a.opsets.size(); ++i)
    if (a.opsets[i].domain != b.opsets[i].domain || a.opsets[i].version != b.opsets[i].version) return "opset differs";
  d.graphs(*a.graph, *b.graph, "");
  return d.out.str();
}

}  // namespace ferry::format::testing
