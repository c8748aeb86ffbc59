// ir::Model -> .ferry file. The graph (and every subgraph) becomes FlatBuffer tables; each constant
// tensor's bytes go to the weight section after the FlatBuffer, at a 64-byte aligned offset, so the
// reader can map the file and use the weights in place. Tensors that share one buffer (the same
// initializer used twice) are stored once.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <deque>
#include <map>
#include <unordered_map>

#include "format/ferry_file.h"
#include "format/ferry_model_generated.h"

#ifndef FERRY_VERSION
#define FERRY_VERSION "unknown"
#endif

namespace ferry::format {

namespace {

namespace fbs = ::flatbuffers;

struct PendingWeight {
  Tensor tensor;  // plain, keeps the bytes alive until written
};

class Writer {
 public:
  fbs::FlatBufferBuilder b{1 << 16};
  std::vector<PendingWeight> weights;

  Result<fbs::Offset<fb::Graph>> graph(const ir::Graph& g) {
    scopes_.emplace_back();
    auto& index = scopes_.back();
    for (size_t i = 0; i < g.values.size(); ++i) index[g.values[i].get()] = static_cast<int32_t>(i);

    std::vector<fbs::Offset<fb::Value>> values;
    for (const auto& v : g.values) {
      FERRY_ASSIGN_OR_RETURN(auto off, value(*v));
      values.push_back(off);
    }
    std::vector<fbs::Offset<fb::Node>> nodes;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      auto off = node(*g.nodes[n]);
      if (!off.ok()) return off.status().with_context("node " + std::to_string(n) + " (" + g.nodes[n]->label() + ")");
      nodes.push_back(*off);
    }
    std::vector<int32_t> inputs;
    for (const ir::Value* v : g.inputs) {
      auto it = index.find(v);
      if (it == index.end()) return Status::internal("graph input '" + v->name + "' is not a value of its graph");
      inputs.push_back(it->second);
    }
    std::vector<fb::ValueRef> outputs;
    for (const ir::Value* v : g.outputs) {
      FERRY_ASSIGN_OR_RETURN(fb::ValueRef r, ref(v));
      outputs.push_back(r);
    }
    scopes_.pop_back();
    return fb::CreateGraphDirect(b, g.name.c_str(), &values, &nodes, &inputs, &outputs);
  }

  Result<fbs::Offset<fb::TensorData>> tensor(const Tensor& t0) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, t0.plain());
    if (t.dtype() == DType::kUndefined) return Status::invalid("a constant tensor has no dtype");
    auto key = std::make_pair(t.raw(), t.nbytes());
    int32_t w;
    auto it = shared_.find(key);
    if (it != shared_.end() && t.nbytes() > 0) {
      w = it->second;
    } else {
      w = static_cast<int32_t>(weights.size());
      weights.push_back({t});
      shared_[key] = w;
    }
    return fb::CreateTensorDataDirect(b, static_cast<fb::DataType>(t.dtype()), &t.dims(), w);
  }

 private:
  // A deque: references to enclosing scopes stay valid while subgraphs push theirs.
  std::deque<std::unordered_map<const ir::Value*, int32_t>> scopes_;
  std::map<std::pair<const void*, size_t>, int32_t> shared_;

  Result<fb::ValueRef> ref(const ir::Value* v) {
    if (!v) return fb::ValueRef(-1, 0);
    for (size_t d = 0; d < scopes_.size(); ++d) {
      const auto& sc = scopes_[scopes_.size() - 1 - d];
      auto it = sc.find(v);
      if (it != sc.end()) return fb::ValueRef(it->second, static_cast<uint32_t>(d));
    }
    return Status::invalid("value '" + v->name + "' belongs to no enclosing graph");
  }

  Result<fbs::Offset<fb::Value>> value(const ir::Value& v) {
    fbs::Offset<fb::Shape> shape = 0;
    if (v.shape) {
      std::vector<fbs::Offset<fb::Dim>> dims;
      for (const Dim& d : *v.shape)
        dims.push_back(fb::CreateDimDirect(b, d.value, d.symbol.empty() ? nullptr : d.symbol.c_str()));
      shape = fb::CreateShapeDirect(b, &dims);
    }
    fbs::Offset<fb::TensorData> init = 0;
    if (v.is_constant()) {
      auto t = tensor(v.initializer);
      if (!t.ok()) return t.status().with_context("value '" + v.name + "'");
      init = *t;
    }
    auto name = b.CreateString(v.name);
    auto onnx_name = b.CreateString(v.onnx_name);
    return fb::CreateValue(b, name, static_cast<fb::ValueKind>(v.kind), static_cast<fb::DataType>(v.dtype), shape,
                           onnx_name, init);
  }

  fbs::Offset<fbs::Vector<fbs::Offset<fbs::String>>> strings(const std::vector<std::string>& s) {
    std::vector<fbs::Offset<fbs::String>> offs;
    for (const std::string& x : s) offs.push_back(b.CreateString(x));
    return b.CreateVector(offs);
  }

  Result<fbs::Offset<fb::Attribute>> attribute(const std::string& name, const ir::Attribute& a) {
    using K = ir::Attribute::Kind;
    fbs::Offset<fbs::String> s = 0;
    fbs::Offset<fb::TensorData> t = 0;
    fbs::Offset<fb::Graph> g = 0;
    fbs::Offset<fbs::Vector<float>> floats = 0;
    fbs::Offset<fbs::Vector<int64_t>> ints = 0;
    fbs::Offset<fbs::Vector<fbs::Offset<fbs::String>>> strs = 0;
    fbs::Offset<fbs::Vector<fbs::Offset<fb::TensorData>>> tensors = 0;
    fbs::Offset<fbs::Vector<fbs::Offset<fb::Graph>>> graphs = 0;
    switch (a.kind) {
      case K::kString: s = b.CreateString(a.s); break;
      case K::kTensor: {
        FERRY_ASSIGN_OR_RETURN(t, tensor(a.t));
        break;
      }
      case K::kGraph: {
        if (!a.g) return Status::invalid("graph attribute '" + name + "' has no graph");
        FERRY_ASSIGN_OR_RETURN(g, graph(*a.g));
        break;
      }
      case K::kFloats: floats = b.CreateVector(a.floats); break;
      case K::kInts: ints = b.CreateVector(a.ints); break;
      case K::kStrings: strs = strings(a.strings); break;
      case K::kTensors: {
        std::vector<fbs::Offset<fb::TensorData>> v;
        for (const Tensor& x : a.tensors) {
          FERRY_ASSIGN_OR_RETURN(auto o, tensor(x));
          v.push_back(o);
        }
        tensors = b.CreateVector(v);
        break;
      }
      case K::kGraphs: {
        std::vector<fbs::Offset<fb::Graph>> v;
        for (const auto& x : a.graphs) {
          if (!x) return Status::invalid("graphs attribute '" + name + "' holds no graph");
          FERRY_ASSIGN_OR_RETURN(auto o, graph(*x));
          v.push_back(o);
        }
        graphs = b.CreateVector(v);
        break;
      }
      default: break;
    }
    auto n = b.CreateString(name);
    return fb::CreateAttribute(b, n, static_cast<fb::AttrKind>(a.kind), a.f, a.i, s, t, g, floats, ints, strs, tensors,
                               graphs, static_cast<fb::ValueKind>(a.type_kind), static_cast<fb::DataType>(a.type_dtype));
  }

  Result<fbs::Offset<fb::Node>> node(const ir::Node& n) {
    std::vector<fb::ValueRef> inputs;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto r = ref(n.inputs[i]);
      if (!r.ok()) return r.status().with_context("input " + std::to_string(i));
      inputs.push_back(*r);
    }
    std::vector<int32_t> outputs;
    const auto& local = scopes_.back();
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (!n.outputs[i]) {
        outputs.push_back(-1);
        continue;
      }
      auto it = local.find(n.outputs[i]);
      if (it == local.end())
        return Status::invalid("output " + std::to_string(i) + " '" + n.outputs[i]->name + "' is not a value of the node's graph");
      outputs.push_back(it->second);
    }
    std::vector<fbs::Offset<fb::Attribute>> attrs;
    for (const auto& [k, a] : n.attrs) {
      auto o = attribute(k, a);
      if (!o.ok()) return o.status().with_context("attribute '" + k + "'");
      attrs.push_back(*o);
    }
    std::vector<fbs::Offset<fbs::String>> prov;
    for (const std::string& x : n.provenance) prov.push_back(b.CreateString(x));
    return fb::CreateNodeDirect(b, n.name.c_str(), n.op_type.c_str(), n.domain.c_str(), n.opset, &inputs, &outputs,
                                &attrs, &prov);
  }
};

uint64_t align_up(uint64_t x) { return (x + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment; }

Status write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::io("cannot write '" + path + "': " + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status();
}

}  // namespace

Status write_model(const ir::Model& model, const CompileOptions& opts, const std::string& path) {
  if (!model.graph) return Status::invalid("cannot write '" + path + "': the model has no graph");
  Writer w;
  auto& b = w.b;
  auto graph = w.graph(*model.graph);
  if (!graph.ok()) return graph.status().with_context("while writing '" + path + "'");

  std::vector<fbs::Offset<fb::InputShape>> shapes;
  for (const auto& [name, dims] : opts.input_shapes) shapes.push_back(fb::CreateInputShapeDirect(b, name.c_str(), &dims));
  auto copts = fb::CreateCompileOptionsDirect(b, opts.opt_level, &shapes, &opts.dynamic_batch, opts.precision.c_str(),
                                              opts.source_path.c_str(), opts.source_size, opts.source_mtime_ns,
                                              opts.target.c_str(), opts.cpu_options.c_str());
  std::vector<fbs::Offset<fb::OpsetImport>> opsets;
  for (const auto& o : model.opsets) opsets.push_back(fb::CreateOpsetImportDirect(b, o.domain.c_str(), o.version));
  std::vector<fbs::Offset<fb::KeyValue>> meta;
  for (const auto& [k, v] : model.metadata) meta.push_back(fb::CreateKeyValueDirect(b, k.c_str(), v.c_str()));

  // Offsets are filled in once the FlatBuffer's size is known (the structs keep their size).
  std::vector<fb::WeightRef> refs;
  for (const auto& pw : w.weights) refs.emplace_back(0, pw.tensor.nbytes());
  fb::FormatVersion version(kFormatMajor, kFormatMinor);
  std::string producer = std::string("ferry ") + FERRY_VERSION;
  auto root = fb::CreateModelDirect(b, &version, producer.c_str(), copts, model.ir_version, model.producer_name.c_str(),
                                    model.producer_version.c_str(), model.doc_string.c_str(), &opsets, &meta, *graph,
                                    &refs);
  b.FinishSizePrefixed(root, kFileIdentifier);

  uint8_t* buf = b.GetBufferPointer();
  const uint64_t fb_size = b.GetSize();
  auto* weights = fb::GetMutableSizePrefixedModel(buf)->mutable_weights();
  std::vector<uint64_t> offsets;
  uint64_t pos = align_up(fb_size);
  for (size_t i = 0; i < w.weights.size(); ++i) {
    offsets.push_back(pos);
    weights->GetMutableObject(static_cast<fbs::uoffset_t>(i))->mutate_offset(pos);
    pos = align_up(pos + w.weights[i].tensor.nbytes());
  }

  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> tmp_name(tmpl.begin(), tmpl.end());
  tmp_name.push_back('\0');
  int fd = ::mkstemp(tmp_name.data());
  if (fd < 0) return Status::io("cannot write '" + path + "': cannot create a temporary file in '" + dir.string() + "': " + std::strerror(errno));
  const std::string tmp(tmp_name.data());
  auto fail = [&](Status s) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  Status st = write_all(fd, buf, fb_size, path);
  if (!st.ok()) return fail(st);
  static const char zeros[kWeightAlignment] = {};
  uint64_t written = fb_size;
  for (size_t i = 0; i < w.weights.size(); ++i) {
    if (offsets[i] > written) {
      st = write_all(fd, zeros, offsets[i] - written, path);
      if (!st.ok()) return fail(st);
    }
    const Tensor& t = w.weights[i].tensor;
    st = write_all(fd, t.raw(), t.nbytes(), path);
    if (!st.ok()) return fail(st);
    written = offsets[i] + t.nbytes();
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0)
    return fail(Status::io("cannot write '" + path + "': " + std::strerror(errno)));
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status::io("cannot write '" + path + "': " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Status::io("cannot write '" + path + "': " + std::strerror(e));
  }
  return Status();
}

}  // namespace ferry::format
