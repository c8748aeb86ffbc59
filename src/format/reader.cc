// .ferry file -> ir::Model. Nothing in the file is trusted: the FlatBuffers verifier checks the table
// structure (every offset inside the buffer, bounded depth and table count), then every field is
// checked for meaning before it becomes IR (enums, indices, weight ranges, sizes with checked
// arithmetic, unique names, single producers, subgraph depth), and finally ir::verify. Weights are
// views into a private mapping of the file, so nothing is copied and nothing outside it is read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/file_mapping.h"
#include "format/ferry_file.h"
#include "format/ferry_model_generated.h"

namespace ferry::format {

namespace {

namespace fbs = ::flatbuffers;

constexpr size_t kMinFileSize = 12;  // size prefix, root offset, identifier

std::string q(const std::string& s) { return "'" + s + "'"; }
std::string str(const fbs::String* s) { return s ? s->str() : std::string(); }

Result<DType> to_dtype(fb::DataType t, const std::string& field) {
  auto v = static_cast<uint8_t>(t);
  if (v > static_cast<uint8_t>(fb::DataType::MAX))
    return Status::invalid(field + " has dtype code " + std::to_string(v) + ", which is not a known element type");
  return static_cast<DType>(v);
}

Result<ir::ValueKind> to_kind(fb::ValueKind k, const std::string& field) {
  auto v = static_cast<uint8_t>(k);
  if (v > static_cast<uint8_t>(fb::ValueKind::MAX))
    return Status::invalid(field + " has value kind " + std::to_string(v) + ", which is not tensor, sequence or optional");
  return static_cast<ir::ValueKind>(v);
}

// FlatBuffers 2.0's verifier checks that a vector's length field is 4-byte aligned, not that its 8-byte
// elements (int64, WeightRef) are 8-byte aligned: a corrupted file can misplace them, and reading them
// would be a misaligned load (undefined behaviour). Every such vector is checked before it is read (an
// empty one has no elements to align: FlatBuffers writes it unaligned).
template <class V>
Status check_aligned(const V* v, const std::string& field) {
  if (v && v->size() != 0 && reinterpret_cast<uintptr_t>(v->Data()) % 8 != 0)
    return Status::invalid(field + " is not 8-byte aligned (corrupted file)");
  return Status();
}

// Parses the verified FlatBuffer into IR, checking every field's meaning.
class Parser {
 public:
  Parser(const uint8_t* data, uint64_t size, uint64_t fb_end, const fb::Model* root, std::shared_ptr<void> keep,
         const ReadLimits& limits)
      : data_(data), size_(size), fb_end_(fb_end), root_(root), keep_(std::move(keep)), limits_(limits) {}

  Status check_weights(uint64_t* total) {
    *total = 0;
    const auto* w = root_->weights();
    if (!w) return Status();
    FERRY_RETURN_IF_ERROR(check_aligned(w, "the weight table"));
    for (fbs::uoffset_t i = 0; i < w->size(); ++i) {
      const fb::WeightRef* r = w->Get(i);
      const uint64_t off = r->offset(), n = r->nbytes();
      const std::string label = "weight " + std::to_string(i);
      if (off % kWeightAlignment != 0)
        return Status::invalid(label + " starts at offset " + std::to_string(off) + ", which is not a multiple of 64");
      if (off < fb_end_)
        return Status::invalid(label + " starts at offset " + std::to_string(off) +
                               ", inside the FlatBuffer (which ends at " + std::to_string(fb_end_) + ")");
      if (off > size_ || n > size_ - off)
        return Status::invalid(label + " (offset " + std::to_string(off) + ", " + std::to_string(n) +
                               " bytes) runs past the end of the file (" + std::to_string(size_) + " bytes; truncated?)");
      *total += n;
    }
    return Status();
  }

  Result<std::shared_ptr<ir::Graph>> main_graph() {
    auto g = std::make_shared<ir::Graph>();
    FERRY_RETURN_IF_ERROR(graph(*root_->graph(), *g, 0).with_context("graph"));
    return g;
  }

 private:
  const uint8_t* data_;
  uint64_t size_, fb_end_;
  const fb::Model* root_;
  std::shared_ptr<void> keep_;
  ReadLimits limits_;
  std::vector<ir::Graph*> scopes_;  // enclosing graphs, innermost last

  Result<Tensor> tensor(const fb::TensorData* t, const std::string& field) {
    if (!t) return Status::invalid(field + " is missing");
    FERRY_ASSIGN_OR_RETURN(DType dt, to_dtype(t->dtype(), field));
    if (dt == DType::kUndefined) return Status::invalid(field + " has no element type");
    std::vector<int64_t> dims;
    FERRY_RETURN_IF_ERROR(check_aligned(t->dims(), field + ": dims"));
    if (t->dims())
      for (int64_t d : *t->dims()) {
        if (d < 0) return Status::invalid(field + " has a negative dimension " + std::to_string(d));
        dims.push_back(d);
      }
    auto numel = checked_numel(dims);
    if (!numel.ok()) return numel.status().with_context(field);
    const uint64_t esize = dtype_size(dt);
    const uint64_t expect = static_cast<uint64_t>(*numel) * esize;  // numel < 2^40, esize <= 8: no overflow
    const auto* w = root_->weights();
    const int32_t wi = t->weight();
    const uint32_t nw = w ? w->size() : 0;
    if (wi < 0 || static_cast<uint32_t>(wi) >= nw)
      return Status::invalid(field + " refers to weight " + std::to_string(wi) + ", but there are " + std::to_string(nw) +
                             " weights");
    const fb::WeightRef* r = w->Get(static_cast<fbs::uoffset_t>(wi));
    if (r->nbytes() != expect)
      return Status::invalid(field + " is " + std::string(dtype_name(dt)) + dims_to_string(dims) + " (" +
                             std::to_string(expect) + " bytes), but weight " + std::to_string(wi) + " holds " +
                             std::to_string(r->nbytes()) + " bytes");
    // check_weights() has bounded offset + nbytes by the file size.
    void* p = const_cast<uint8_t*>(data_) + r->offset();
    return Tensor::wrap(dt, std::move(dims), p, keep_);
  }

  Result<ir::Value*> resolve(const fb::ValueRef* r, const std::string& field) {
    if (r->depth() >= scopes_.size())
      return Status::invalid(field + " refers to a graph " + std::to_string(r->depth()) + " levels up, but it is nested only " +
                             std::to_string(scopes_.size() - 1) + " deep");
    const ir::Graph* g = scopes_[scopes_.size() - 1 - r->depth()];
    if (r->index() < 0 || static_cast<size_t>(r->index()) >= g->values.size())
      return Status::invalid(field + " refers to value " + std::to_string(r->index()) + ", but there are " +
                             std::to_string(g->values.size()) + " values" +
                             (r->depth() ? " in the graph " + std::to_string(r->depth()) + " levels up" : ""));
    return g->values[static_cast<size_t>(r->index())].get();
  }

  Status value(const fb::Value& fv, ir::Graph& g, size_t i) {
    const std::string name = fv.name()->str();
    const std::string label = "value " + std::to_string(i) + " (" + q(name) + ")";
    if (name.empty()) return Status::invalid("value " + std::to_string(i) + " has an empty name");
    if (g.find_local_value(name)) return Status::invalid(label + ": the name is used by two values");
    ir::Value* v = g.add_value(name);
    FERRY_ASSIGN_OR_RETURN(v->kind, to_kind(fv.kind(), label));
    FERRY_ASSIGN_OR_RETURN(v->dtype, to_dtype(fv.dtype(), label));
    v->onnx_name = str(fv.onnx_name());
    if (const fb::Shape* s = fv.shape()) {
      Shape shape;
      if (s->dims())
        for (fbs::uoffset_t d = 0; d < s->dims()->size(); ++d) {
          const fb::Dim* fd = s->dims()->Get(d);
          if (fd->value() < -1)
            return Status::invalid(label + " dimension " + std::to_string(d) + " is " + std::to_string(fd->value()));
          Dim dim(fd->value());
          if (fd->value() < 0 && fd->symbol()) dim.symbol = fd->symbol()->str();
          shape.push_back(dim);
        }
      v->shape = std::move(shape);
    }
    if (fv.initializer()) {
      FERRY_ASSIGN_OR_RETURN(v->initializer, tensor(fv.initializer(), label + " initializer"));
      if (v->kind != ir::ValueKind::kTensor) return Status::invalid(label + " is a constant but not a tensor");
    }
    return Status();
  }

  Status attribute(const fb::Attribute& fa, ir::Attribute& a, int depth, const std::string& label) {
    using K = ir::Attribute::Kind;
    auto k = static_cast<uint8_t>(fa.kind());
    if (k > static_cast<uint8_t>(fb::AttrKind::MAX))
      return Status::invalid(label + " has kind code " + std::to_string(k) + ", which is not an attribute kind");
    a.kind = static_cast<K>(k);
    a.f = fa.f();
    a.i = fa.i();
    FERRY_ASSIGN_OR_RETURN(a.type_kind, to_kind(fa.type_kind(), label));
    FERRY_ASSIGN_OR_RETURN(a.type_dtype, to_dtype(fa.type_dtype(), label));
    switch (a.kind) {
      case K::kString: a.s = str(fa.s()); break;
      case K::kTensor: {
        FERRY_ASSIGN_OR_RETURN(a.t, tensor(fa.t(), label + " tensor"));
        break;
      }
      case K::kGraph: {
        if (!fa.g()) return Status::invalid(label + " is a graph attribute without a graph");
        a.g = std::make_shared<ir::Graph>();
        FERRY_RETURN_IF_ERROR(graph(*fa.g(), *a.g, depth + 1).with_context(label));
        break;
      }
      case K::kFloats:
        if (fa.floats()) a.floats.assign(fa.floats()->begin(), fa.floats()->end());
        break;
      case K::kInts:
        FERRY_RETURN_IF_ERROR(check_aligned(fa.ints(), label + ": ints"));
        if (fa.ints()) a.ints.assign(fa.ints()->begin(), fa.ints()->end());
        break;
      case K::kStrings:
        if (fa.strings())
          for (const fbs::String* s : *fa.strings()) a.strings.push_back(str(s));
        break;
      case K::kTensors:
        if (fa.tensors())
          for (fbs::uoffset_t i = 0; i < fa.tensors()->size(); ++i) {
            FERRY_ASSIGN_OR_RETURN(Tensor t, tensor(fa.tensors()->Get(i), label + " tensor " + std::to_string(i)));
            a.tensors.push_back(std::move(t));
          }
        break;
      case K::kGraphs:
        if (fa.graphs())
          for (fbs::uoffset_t i = 0; i < fa.graphs()->size(); ++i) {
            auto sg = std::make_shared<ir::Graph>();
            FERRY_RETURN_IF_ERROR(
                graph(*fa.graphs()->Get(i), *sg, depth + 1).with_context(label + " graph " + std::to_string(i)));
            a.graphs.push_back(std::move(sg));
          }
        break;
      default: break;
    }
    return Status();
  }

  Status node(const fb::Node& fn, ir::Graph& g, int depth, const std::string& label) {
    const std::string op_type = fn.op_type()->str();
    if (op_type.empty()) return Status::invalid(label + " has no op_type");
    ir::Node* n = g.add_node(op_type, str(fn.name()));
    n->domain = str(fn.domain());
    n->opset = fn.opset();
    if (n->opset < 0) return Status::invalid(label + " has opset " + std::to_string(n->opset));
    if (fn.inputs())
      for (fbs::uoffset_t i = 0; i < fn.inputs()->size(); ++i) {
        const fb::ValueRef* r = fn.inputs()->Get(i);
        if (r->index() == -1) {
          n->inputs.push_back(nullptr);
          continue;
        }
        FERRY_ASSIGN_OR_RETURN(ir::Value * v, resolve(r, label + " input " + std::to_string(i)));
        n->inputs.push_back(v);
      }
    if (fn.outputs())
      for (fbs::uoffset_t i = 0; i < fn.outputs()->size(); ++i) {
        const int32_t idx = fn.outputs()->Get(i);
        const std::string field = label + " output " + std::to_string(i);
        if (idx == -1) {
          n->outputs.push_back(nullptr);
          continue;
        }
        if (idx < 0 || static_cast<size_t>(idx) >= g.values.size())
          return Status::invalid(field + " refers to value " + std::to_string(idx) + ", but there are " +
                                 std::to_string(g.values.size()) + " values");
        ir::Value* v = g.values[static_cast<size_t>(idx)].get();
        if (v->producer)
          return Status::invalid(field + " is value " + q(v->name) + ", which " + v->producer->label() +
                                 " already produces");
        if (v->is_graph_input || v->is_constant())
          return Status::invalid(field + " is value " + q(v->name) + ", which is a graph input or a constant");
        v->producer = n;
        v->producer_output = static_cast<int>(i);
        n->outputs.push_back(v);
      }
    if (fn.attributes())
      for (fbs::uoffset_t i = 0; i < fn.attributes()->size(); ++i) {
        const fb::Attribute* fa = fn.attributes()->Get(i);
        const std::string name = fa->name()->str();
        const std::string alabel = label + " attribute " + q(name);
        if (name.empty()) return Status::invalid(label + " attribute " + std::to_string(i) + " has an empty name");
        if (n->attrs.count(name)) return Status::invalid(alabel + " is given twice");
        FERRY_RETURN_IF_ERROR(attribute(*fa, n->attrs[name], depth, alabel));
        if (n->attrs[name].g) n->attrs[name].g->parent = &g;
        for (auto& sg : n->attrs[name].graphs) sg->parent = &g;
      }
    if (fn.provenance())
      for (const fbs::String* s : *fn.provenance()) n->provenance.push_back(str(s));
    return Status();
  }

  Status graph(const fb::Graph& fg, ir::Graph& g, int depth) {
    if (depth > limits_.max_subgraph_depth)
      return Status::invalid("subgraphs nest deeper than " + std::to_string(limits_.max_subgraph_depth) + " levels");
    g.name = str(fg.name());
    scopes_.push_back(&g);
    struct Pop {
      std::vector<ir::Graph*>& s;
      ~Pop() { s.pop_back(); }
    } pop{scopes_};
    if (fg.values())
      for (fbs::uoffset_t i = 0; i < fg.values()->size(); ++i) FERRY_RETURN_IF_ERROR(value(*fg.values()->Get(i), g, i));
    if (fg.inputs())
      for (fbs::uoffset_t i = 0; i < fg.inputs()->size(); ++i) {
        const int32_t idx = fg.inputs()->Get(i);
        if (idx < 0 || static_cast<size_t>(idx) >= g.values.size())
          return Status::invalid("input " + std::to_string(i) + " refers to value " + std::to_string(idx) +
                                 ", but there are " + std::to_string(g.values.size()) + " values");
        ir::Value* v = g.values[static_cast<size_t>(idx)].get();
        if (v->is_graph_input) return Status::invalid("input " + std::to_string(i) + " (" + q(v->name) + ") is listed twice");
        v->is_graph_input = true;
        g.inputs.push_back(v);
      }
    if (fg.nodes())
      for (fbs::uoffset_t i = 0; i < fg.nodes()->size(); ++i)
        FERRY_RETURN_IF_ERROR(node(*fg.nodes()->Get(i), g, depth, "node " + std::to_string(i)));
    if (fg.outputs())
      for (fbs::uoffset_t i = 0; i < fg.outputs()->size(); ++i) {
        const fb::ValueRef* r = fg.outputs()->Get(i);
        FERRY_ASSIGN_OR_RETURN(ir::Value * v, resolve(r, "output " + std::to_string(i)));
        g.outputs.push_back(v);
      }
    return Status();
  }
};

Status check_compile_options(const fb::CompileOptions* c, CompileOptions& o) {
  if (!c) return Status();
  o.opt_level = c->opt_level();
  if (o.opt_level < 0 || o.opt_level > 3)
    return Status::invalid("compile options: opt_level " + std::to_string(o.opt_level) + " is not 0..3");
  if (c->input_shapes())
    for (const fb::InputShape* s : *c->input_shapes()) {
      std::vector<int64_t> dims;
      FERRY_RETURN_IF_ERROR(check_aligned(s->dims(), "compile options: input shape dims"));
      if (s->dims()) dims.assign(s->dims()->begin(), s->dims()->end());
      for (int64_t d : dims)
        if (d < 0) return Status::invalid("compile options: input shape '" + s->name()->str() + "' has a negative dim");
      if (!o.input_shapes.emplace(s->name()->str(), dims).second)
        return Status::invalid("compile options: input shape '" + s->name()->str() + "' is given twice");
    }
  FERRY_RETURN_IF_ERROR(check_aligned(c->dynamic_batch(), "compile options: dynamic-batch gears"));
  if (c->dynamic_batch()) {
    int64_t prev = 0;
    for (int64_t b : *c->dynamic_batch()) {
      if (b <= prev)
        return Status::invalid("compile options: dynamic-batch gears must be positive and increasing, got " +
                               std::to_string(b) + " after " + std::to_string(prev));
      o.dynamic_batch.push_back(b);
      prev = b;
    }
  }
  o.precision = str(c->precision());
  o.source_path = str(c->source_path());
  o.source_size = c->source_size();
  o.source_mtime_ns = c->source_mtime_ns();
  o.target = str(c->target());
  o.cpu_options = str(c->cpu_options());
  return Status();
}

Result<FerryModel> parse(const uint8_t* data, uint64_t size, std::shared_ptr<void> keep, const std::string& label,
                         const ReadLimits& limits) {
  if (size < kMinFileSize)
    return Status::invalid("is too short to be a .ferry file (" + std::to_string(size) + " bytes)");
  if (!has_ferry_identifier(data, size)) return Status::invalid("is not a .ferry file (no 'FRRY' identifier)");
  uint32_t prefix;
  std::memcpy(&prefix, data, 4);
  const uint64_t fb_end = 4 + static_cast<uint64_t>(prefix);
  if (fb_end > size)
    return Status::invalid("the model section claims " + std::to_string(prefix) + " bytes but the file has only " +
                           std::to_string(size) + " (truncated?)");
  if (prefix >= FLATBUFFERS_MAX_BUFFER_SIZE) return Status::invalid("the model section is too large");

  fbs::Verifier::Options vo;
  vo.max_depth = limits.max_flatbuffer_depth;
  vo.max_tables = limits.max_flatbuffer_tables;
  // The version is checked before the whole structure: a newer major may have changed the schema, and
  // then "written by a newer ferry" is the useful error, not "corrupted".
  {
    fbs::Verifier v(data + 4, prefix, vo);
    const fbs::uoffset_t ro = v.VerifyOffset(0);
    if (ro == 0) return Status::invalid("the model section's root offset is invalid (corrupted file)");
    const auto* root = reinterpret_cast<const fb::Model*>(data + 4 + ro);
    const auto* table = reinterpret_cast<const fbs::Table*>(data + 4 + ro);
    if (!table->VerifyTableStart(v) ||
        !table->VerifyFieldRequired<fb::FormatVersion>(v, fb::Model::VT_VERSION, 2))
      return Status::invalid("the format version field is missing or invalid (corrupted file)");
    const fb::FormatVersion* ver = root->version();
    if (ver->major() > kFormatMajor)
      return Status::unsupported("was written in .ferry format " + std::to_string(ver->major()) + "." +
                                 std::to_string(ver->minor()) + " by a newer ferry; this ferry reads format " +
                                 std::to_string(kFormatMajor) + ".x (recompile the model, or use a newer ferry)");
    if (ver->major() < 1)
      return Status::invalid("has unknown .ferry format version " + std::to_string(ver->major()) + "." +
                             std::to_string(ver->minor()));
  }
  {
    fbs::Verifier v(data, fb_end, vo);
    if (!fb::VerifySizePrefixedModelBuffer(v))
      return Status::invalid("the model section is not a valid FlatBuffer (corrupted or truncated file)");
  }
  const fb::Model* root = fb::GetSizePrefixedModel(data);

  FerryModel out;
  out.version_major = root->version()->major();
  out.version_minor = root->version()->minor();
  out.producer = str(root->producer());
  out.file_size = size;
  FERRY_RETURN_IF_ERROR(check_compile_options(root->compile_options(), out.options));

  Parser p(data, size, fb_end, root, keep, limits);
  FERRY_RETURN_IF_ERROR(p.check_weights(&out.weight_bytes));
  auto model = std::make_unique<ir::Model>();
  model->ir_version = root->ir_version();
  model->producer_name = str(root->producer_name());
  model->producer_version = str(root->producer_version());
  model->doc_string = str(root->doc_string());
  model->source_path = label;
  if (root->opsets())
    for (const fb::OpsetImport* o : *root->opsets()) model->opsets.push_back({str(o->domain()), o->version()});
  if (root->metadata())
    for (const fb::KeyValue* kv : *root->metadata())
      if (!model->metadata.emplace(kv->key()->str(), str(kv->value())).second)
        return Status::invalid("metadata key '" + kv->key()->str() + "' is given twice");
  FERRY_ASSIGN_OR_RETURN(model->graph, p.main_graph());
  Status st = ir::verify(*model->graph);
  if (!st.ok()) return st.with_context("the stored graph is inconsistent");
  out.model = std::move(model);
  out.mapping = std::move(keep);
  out.data = data;
  out.label = label;
  out.limits = limits;
  return out;
}

// A read-only-to-the-file mapping: MAP_PRIVATE, so a kernel that writes into a weight (none should)
// gets its own page instead of a crash or a change to the file.
// Registered (core/file_mapping.h) so that the pages of a weight a kernel has prepacked can be dropped.
struct Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr == MAP_FAILED) return;
    unregister_file_mapping(addr);
    ::munmap(addr, size);
  }
};

}  // namespace

bool has_ferry_identifier(const void* bytes, size_t n) {
  return n >= kMinFileSize && std::memcmp(static_cast<const char*>(bytes) + 8, kFileIdentifier, 4) == 0;
}

bool is_ferry_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[kMinFileSize];
  size_t got = 0;
  while (got < sizeof buf) {
    ssize_t r = ::read(fd, buf + got, sizeof buf - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return has_ferry_identifier(buf, got);
}

Result<FerryModel> read_model(const std::string& path, const ReadLimits& limits) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::io("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::io("'" + path + "' is not a regular file");
  }
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size < kMinFileSize) {
    ::close(fd);
    return Status::invalid(path + ": is too short to be a .ferry file (" + std::to_string(m->size) + " bytes)");
  }
  m->addr = ::mmap(nullptr, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (m->addr == MAP_FAILED) return Status::io("cannot map '" + path + "': " + std::strerror(e));
  register_file_mapping(m->addr, m->size);
  auto r = parse(static_cast<const uint8_t*>(m->addr), m->size, m, path, limits);
  if (!r.ok()) return r.status().with_context(path);
  return r;
}

Result<FerryModel> read_model_bytes(const void* data, size_t n, const std::string& label, const ReadLimits& limits) {
  // An owned, 64-byte aligned copy, so the weight views are aligned as in a mapping.
  size_t cap = (n + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  void* p = std::aligned_alloc(kWeightAlignment, cap ? cap : kWeightAlignment);
  if (!p) return Status::io(label + ": out of memory");
  std::shared_ptr<void> keep(p, [](void* q) { std::free(q); });
  if (n) std::memcpy(p, data, n);
  auto r = parse(static_cast<const uint8_t*>(p), n, keep, label, limits);
  if (!r.ok()) return r.status().with_context(label);
  return r;
}

Result<std::unique_ptr<ir::Model>> reparse_model(const FerryModel& m) {
  if (!m.data || !m.mapping) return Status::invalid("reparse_model needs a model read from a .ferry file");
  auto r = parse(m.data, m.file_size, m.mapping, m.label, m.limits);
  if (!r.ok()) return r.status().with_context(m.label);
  return std::move(r->model);
}

}  // namespace ferry::format
