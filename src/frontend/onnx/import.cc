// ONNX ModelProto -> ir::Model. Nodes are imported in a topological order (sorted here: some exporters
// emit nodes out of order), every node gets its ONNX name as provenance, and all unsupported ops of the
// model (subgraphs included) are reported in ONE error.
#include "frontend/onnx/import.h"
#include "frontend/onnx/import_cache.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "frontend/onnx/functions.h"
#include "frontend/onnx/parse_failure.h"
#include "core/onnx_dtype.h"
#include "onnx/onnx_pb.h"
#include "ops/op.h"
#include "ops/opset.h"

namespace ferry::frontend {

namespace fs = std::filesystem;

namespace {

struct ImportState {
  const ir::Model* model = nullptr;
  std::string base_dir;
  FunctionTable functions;
  // (domain, op) -> (count, opset) for ops the registry lacks
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> unsupported;
  int64_t unnamed = 0;
};

Status read_type(const onnx::TypeProto& tp, ir::Value& v) {
  const onnx::TypeProto* t = &tp;
  if (t->has_sequence_type()) {
    v.kind = ir::ValueKind::kSequence;
    t = &t->sequence_type().elem_type();
  } else if (t->has_optional_type()) {
    v.kind = ir::ValueKind::kOptional;
    t = &t->optional_type().elem_type();
    if (t->has_sequence_type()) t = &t->sequence_type().elem_type();
  } else if (t->has_map_type()) {
    return Status::unsupported("value '" + v.name + "' is a map; map types are not supported by ferry");
  }
  if (!t->has_tensor_type()) return Status();
  const auto& tt = t->tensor_type();
  if (tt.elem_type() != 0) {
    auto dt = dtype_from_onnx(tt.elem_type());
    if (!dt.ok()) return dt.status().with_context("value '" + v.name + "'");
    v.dtype = *dt;
  }
  if (tt.has_shape() && v.kind == ir::ValueKind::kTensor) {
    Shape s;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          return Status::invalid("value '" + v.name + "' declares a negative dimension " +
                                 std::to_string(d.dim_value()));
        s.emplace_back(d.dim_value());
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        s.push_back(Dim::symbolic(d.dim_param()));
      } else {
        s.emplace_back();
      }
    }
    v.shape = std::move(s);
  }
  return Status();
}

Status import_graph(const onnx::GraphProto& gp, ir::Graph& g, ImportState& st);

Status convert_attribute(const onnx::AttributeProto& ap, ir::Graph& owner, ir::Attribute& a, ImportState& st) {
  using K = ir::Attribute::Kind;
  switch (ap.type()) {
    case onnx::AttributeProto::FLOAT: a.kind = K::kFloat; a.f = ap.f(); break;
    case onnx::AttributeProto::INT: a.kind = K::kInt; a.i = ap.i(); break;
    case onnx::AttributeProto::STRING: a.kind = K::kString; a.s = ap.s(); break;
    case onnx::AttributeProto::FLOATS: a.kind = K::kFloats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
    case onnx::AttributeProto::INTS: a.kind = K::kInts; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
    case onnx::AttributeProto::STRINGS: a.kind = K::kStrings; a.strings.assign(ap.strings().begin(), ap.strings().end()); break;
    case onnx::AttributeProto::TENSOR: {
      a.kind = K::kTensor;
      FERRY_ASSIGN_OR_RETURN(a.t, tensor_from_proto(ap.t(), st.base_dir));
      break;
    }
    case onnx::AttributeProto::TENSORS: {
      a.kind = K::kTensors;
      for (const auto& tp : ap.tensors()) {
        FERRY_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, st.base_dir));
        a.tensors.push_back(std::move(t));
      }
      break;
    }
    case onnx::AttributeProto::GRAPH: {
      a.kind = K::kGraph;
      a.g = std::make_shared<ir::Graph>();
      a.g->parent = &owner;
      FERRY_RETURN_IF_ERROR(import_graph(ap.g(), *a.g, st));
      break;
    }
    case onnx::AttributeProto::GRAPHS: {
      a.kind = K::kGraphs;
      for (const auto& sg : ap.graphs()) {
        auto g = std::make_shared<ir::Graph>();
        g->parent = &owner;
        FERRY_RETURN_IF_ERROR(import_graph(sg, *g, st));
        a.graphs.push_back(std::move(g));
      }
      break;
    }
    case onnx::AttributeProto::TYPE_PROTO: {
      a.kind = K::kType;
      ir::Value tmp;
      tmp.name = ap.name();
      FERRY_RETURN_IF_ERROR(read_type(ap.tp(), tmp));
      a.type_kind = tmp.kind;
      a.type_dtype = tmp.dtype;
      break;
    }
    case onnx::AttributeProto::SPARSE_TENSOR:
    case onnx::AttributeProto::SPARSE_TENSORS:
      return Status::unsupported("sparse tensor attributes are not supported by ferry");
    default:
      // Old models sometimes omit `type`: infer it from the populated field.
      if (ap.has_f()) { a.kind = K::kFloat; a.f = ap.f(); break; }
      if (ap.has_i()) { a.kind = K::kInt; a.i = ap.i(); break; }
      if (ap.has_s()) { a.kind = K::kString; a.s = ap.s(); break; }
      if (ap.ints_size()) { a.kind = K::kInts; a.ints.assign(ap.ints().begin(), ap.ints().end()); break; }
      if (ap.floats_size()) { a.kind = K::kFloats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break; }
      return Status::invalid("attribute '" + ap.name() + "' has no type");
  }
  return Status();
}

// Orders node indices so every node comes after the producers of its inputs (stable for sorted input).
Result<std::vector<int>> topological_order(const std::vector<onnx::NodeProto>& nodes, const ir::Graph& g) {
  const int n = static_cast<int>(nodes.size());
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : nodes[i].output())
      if (!o.empty()) producer.emplace(o, i);
  // Inputs a node needs from other nodes, including names its subgraphs capture from this scope.
  std::vector<std::vector<int>> deps(n);
  std::function<void(const onnx::GraphProto&, std::set<std::string>&)> collect_sub_refs;
  collect_sub_refs = [&](const onnx::GraphProto& sg, std::set<std::string>& names) {
    for (const auto& node : sg.node()) {
      for (const auto& in : node.input()) names.insert(in);
      for (const auto& at : node.attribute()) {
        if (at.has_g()) collect_sub_refs(at.g(), names);
        for (const auto& gg : at.graphs()) collect_sub_refs(gg, names);
      }
    }
  };
  for (int i = 0; i < n; ++i) {
    std::set<std::string> names(nodes[i].input().begin(), nodes[i].input().end());
    for (const auto& at : nodes[i].attribute()) {
      if (at.has_g()) collect_sub_refs(at.g(), names);
      for (const auto& gg : at.graphs()) collect_sub_refs(gg, names);
    }
    for (const auto& nm : names) {
      if (nm.empty() || g.find_local_value(nm)) continue;  // graph input / initializer
      auto it = producer.find(nm);
      if (it != producer.end() && it->second != i) deps[i].push_back(it->second);
    }
  }
  std::vector<int> order, state(n, 0);  // 0 new, 1 visiting, 2 done
  std::function<Status(int)> visit = [&](int i) -> Status {
    if (state[i] == 2) return Status();
    if (state[i] == 1)
      return Status::invalid("the graph has a cycle through node '" + nodes[i].name() + "' (" +
                             nodes[i].op_type() + ")");
    state[i] = 1;
    for (int d : deps[i]) FERRY_RETURN_IF_ERROR(visit(d));
    state[i] = 2;
    order.push_back(i);
    return Status();
  };
  for (int i = 0; i < n; ++i) FERRY_RETURN_IF_ERROR(visit(i));
  return order;
}

Status import_graph(const onnx::GraphProto& gp, ir::Graph& g, ImportState& st) {
  g.name = gp.name();
  if (gp.sparse_initializer_size())
    return Status::unsupported("graph '" + gp.name() + "' has sparse initializers, which ferry does not support");
  // Initializers first: in IR version < 4 they may also be listed as graph inputs (defaults).
  for (const auto& tp : gp.initializer()) {
    if (tp.name().empty()) return Status::invalid("an initializer has no name");
    if (g.find_local_value(tp.name())) return Status::invalid("initializer '" + tp.name() + "' is defined twice");
    ir::Value* v = g.add_value(tp.name());
    auto t = tensor_from_proto(tp, st.base_dir);
    if (!t.ok()) return t.status().with_context("while loading initializer '" + tp.name() + "'");
    v->initializer = std::move(t).value();
    // The proto is always one this file parsed and drops after the import: freeing each initializer's
    // bytes once copied keeps the import's peak at about one copy of the weights, not two.
    if (tp.has_raw_data()) std::string().swap(*const_cast<onnx::TensorProto&>(tp).mutable_raw_data());
    v->dtype = v->initializer.dtype();
    v->shape = to_shape(v->initializer.dims());
  }
  for (const auto& vi : gp.input()) {
    ir::Value* v = g.find_local_value(vi.name());
    if (v && !v->is_constant()) return Status::invalid("graph input '" + vi.name() + "' is listed twice");
    if (!v) {
      v = g.add_value(vi.name());
      FERRY_RETURN_IF_ERROR(read_type(vi.type(), *v));
    }
    v->is_graph_input = true;
    g.inputs.push_back(v);
  }
  std::vector<int64_t> fn_opsets;
  FERRY_ASSIGN_OR_RETURN(std::vector<onnx::NodeProto> nodes, inline_function_calls(gp, st.functions, fn_opsets));
  FERRY_ASSIGN_OR_RETURN(std::vector<int> order, topological_order(nodes, g));
  const ops::OpRegistry& reg = ops::OpRegistry::global();
  for (int idx : order) {
    const onnx::NodeProto& np = nodes[idx];
    std::string name = np.name().empty() ? np.op_type() + "_" + std::to_string(st.unnamed++) : np.name();
    ir::Node* node = g.add_node(np.op_type(), name);
    node->domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node->opset = static_cast<int>(fn_opsets[idx] ? fn_opsets[idx] : st.model->opset_for(node->domain));
    node->provenance = {name};
    std::string where = "while importing node '" + name + "' (" + np.op_type() + ")";
    for (const auto& in : np.input()) {
      if (in.empty()) {
        node->inputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = g.find_value(in);
      if (!v)
        return Status::invalid("input '" + in + "' is not produced by any node, graph input or initializer")
            .with_context(where);
      node->inputs.push_back(v);
    }
    for (const auto& at : np.attribute()) {
      ir::Attribute a;
      Status s = convert_attribute(at, g, a, st);
      if (!s.ok()) return s.with_context("attribute '" + at.name() + "'").with_context(where);
      node->attrs[at.name()] = std::move(a);
    }
    for (size_t k = 0; k < static_cast<size_t>(np.output_size()); ++k) {
      const std::string& out = np.output(static_cast<int>(k));
      if (out.empty()) {
        node->outputs.push_back(nullptr);
        continue;
      }
      if (g.find_local_value(out))
        return Status::invalid("output '" + out + "' is already produced elsewhere").with_context(where);
      ir::Value* v = g.add_value(out);
      v->producer = node;
      v->producer_output = static_cast<int>(k);
      node->outputs.push_back(v);
    }
    if (!reg.find(node->domain, node->op_type, node->opset)) {
      auto& e = st.unsupported[{node->domain, node->op_type}];
      e.first++;
      e.second = node->opset;
    }
  }
  for (const auto& vi : gp.value_info()) {
    if (ir::Value* v = g.find_local_value(vi.name())) {
      if (!v->is_constant()) FERRY_RETURN_IF_ERROR(read_type(vi.type(), *v));
    }
  }
  for (const auto& vi : gp.output()) {
    ir::Value* v = g.find_value(vi.name());
    if (!v) return Status::invalid("graph output '" + vi.name() + "' is not produced by any node or input");
    if (!v->is_constant() && v->graph == &g) FERRY_RETURN_IF_ERROR(read_type(vi.type(), *v));
    g.outputs.push_back(v);
  }
  return Status();
}

}  // namespace

namespace {
Result<std::unique_ptr<ir::Model>> import_model(onnx::ModelProto& mp, const std::string& base_dir,
                                                const std::string& label, const ImportOptions& opts);
}  // namespace

Result<std::unique_ptr<ir::Model>> load_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                                   const std::string& label, const ImportOptions& opts) {
  onnx::ModelProto mp;
  if (bytes.empty()) return Status::invalid(label + ": the file is empty");
  if (!mp.ParseFromString(bytes)) return Status::invalid(model_parse_error(label, bytes));
  return import_model(mp, base_dir, label, opts);
}

namespace {
Result<std::unique_ptr<ir::Model>> import_model(onnx::ModelProto& mp, const std::string& base_dir,
                                                const std::string& label, const ImportOptions& opts) {
  if (!mp.has_graph()) return Status::invalid(label + ": not a valid ONNX model (it has no graph)");
  auto model = std::make_unique<ir::Model>();
  model->ir_version = mp.ir_version();
  model->producer_name = mp.producer_name();
  model->producer_version = mp.producer_version();
  model->doc_string = mp.doc_string();
  model->source_path = label;
  for (const auto& p : mp.metadata_props()) model->metadata[p.key()] = p.value();
  for (const auto& o : mp.opset_import())
    model->opsets.push_back({o.domain() == "ai.onnx" ? "" : o.domain(), o.version()});
  if (mp.opset_import_size() == 0) model->opsets.push_back({"", 1});  // IR v1/2 models: opset 1
  int64_t default_opset = model->opset_for("");
  if (default_opset == 0 && mp.graph().node_size() > 0) {
    // A model that only uses custom domains may omit the default domain; ops still need a version.
    model->opsets.push_back({"", 0});
  } else if (default_opset < opts.min_opset) {
    return Status::unsupported(label + ": default-domain opset " + std::to_string(default_opset) +
                               " is older than " + std::to_string(opts.min_opset) +
                               ", the oldest ferry supports (convert it with onnx.version_converter)");
  } else if (std::string newer = newer_opset_note(*model); !newer.empty() && !opts.allow_newer_opset) {
    return Status::unsupported(label + ": default-domain " + newer +
                               "; ops may mean something else there (pass --allow-newer-opset to load it anyway)");
  }
  ImportState st;
  st.functions = make_function_table(mp);
  st.model = model.get();
  st.base_dir = base_dir;
  model->graph = std::make_shared<ir::Graph>();
  Status s = import_graph(mp.graph(), *model->graph, st);
  if (!s.ok()) return s.with_context(label);
  if (opts.check_ops && !st.unsupported.empty()) {
    std::string msg = label + ": the model uses " + std::to_string(st.unsupported.size()) +
                      " op type(s) ferry does not support:";
    const ops::OpRegistry& reg = ops::OpRegistry::global();
    for (const auto& [key, info] : st.unsupported) {
      std::string op = key.first.empty() ? key.second : key.first + "." + key.second;
      msg += " " + op + " (" + std::to_string(info.first) + " node" + (info.first == 1 ? "" : "s") + ", opset " +
             std::to_string(info.second) + (reg.knows(key.first, key.second) ? ": this opset is not supported" : "") +
             ");";
    }
    msg.pop_back();
    return Status::unsupported(msg);
  }
  s = ir::verify(*model->graph);
  if (!s.ok()) return s.with_context(label);
  s = ops::infer_graph(*model->graph);
  if (!s.ok()) return s.with_context(label);
  return model;
}
}  // namespace

std::string newer_opset_note(const ir::Model& model) {
  const int64_t opset = model.opset_for("");
  if (opset <= ops::kNewestOnnxOpset) return "";
  return "opset " + std::to_string(opset) + " is newer than the newest ferry supports (" +
         std::to_string(ops::kNewestOnnxOpset) + ")";
}

Result<std::unique_ptr<ir::Model>> load_onnx(const std::string& path, const ImportOptions& opts) {
  struct stat stt;
  if (stat(path.c_str(), &stt) != 0) return Status::io("cannot open model '" + path + "': no such file");
  if (!S_ISREG(stt.st_mode)) return Status::io("cannot open model '" + path + "': not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::io("cannot open model '" + path + "'");
  if (stt.st_size == 0) return Status::invalid(path + ": the file is empty");
  const std::string cache_key = import_cache_key(path, stt);
  if (std::unique_ptr<ir::Model> copy = cached_import(cache_key, opts)) return copy;
  std::string base = fs::path(path).parent_path().string();
  if (base.empty()) base = ".";
  // Parsed from the stream, not from a copy of the file in memory: a 300 MB model costs 300 MB once.
  onnx::ModelProto mp;
  if (!mp.ParseFromIstream(&f)) {
    // Only now is the file read into memory: to say why it did not parse.
    std::ifstream again(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
    return Status::invalid(model_parse_error(path, bytes));
  }
  auto model = import_model(mp, base, path, opts);
  if (model.ok()) remember_import(cache_key, opts, **model);
  return model;
}

}  // namespace ferry::frontend
