#include "backends/cpu/layout.h"

#include "ops/util/round_float.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "backends/cpu/cpu_backend.h"
#include "ops/util/round_float.h"
#include "passes/pass_util.h"

namespace ferry::backends::cpu {

using dt = dnnl::memory::data_type;

dt dnnl_dtype(DType t) {
  switch (t) {
    case DType::kFloat32: return dt::f32;
    case DType::kFloat16: return dt::f16;
    case DType::kBFloat16: return dt::bf16;
    case DType::kInt32: return dt::s32;
    case DType::kInt8: return dt::s8;
    case DType::kUInt8: return dt::u8;
    default: return dt::undef;
  }
}

dnnl::memory::desc plain_desc(DType t, const std::vector<int64_t>& dims) {
  dnnl::memory::dims d(dims.begin(), dims.end());
  if (d.empty()) d.push_back(1);
  dnnl::memory::dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * std::max<int64_t>(d[i + 1], 1);
  return dnnl::memory::desc(d, dnnl_dtype(t), strides);
}

dnnl::memory::dims to_dims(const std::vector<int64_t>& v) { return dnnl::memory::dims(v.begin(), v.end()); }

std::vector<int64_t> dims_of(const dnnl::memory::desc& m) {
  const dnnl::memory::dims d = m.dims();
  return std::vector<int64_t>(d.begin(), d.end());
}

std::vector<int64_t> dense_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

Tensor broadcast_plain(const Tensor& t, const std::vector<int64_t>& dims) {
  Tensor out(DType::kFloat32, dims);
  const int r = static_cast<int>(dims.size());
  std::vector<int64_t> td(r - t.rank(), 1);
  td.insert(td.end(), t.dims().begin(), t.dims().end());
  std::vector<int64_t> ts = dense_strides(td);
  for (int i = 0; i < r; ++i)
    if (td[i] == 1) ts[i] = 0;
  std::vector<int64_t> idx(r, 0);
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t off = 0;
    for (int i = 0; i < r; ++i) off += idx[i] * ts[i];
    dst[o] = src[off];
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

dnnl::memory::desc channels_last_desc(const std::vector<int64_t>& nchw) {
  return dnnl::memory::desc(dnnl::memory::dims(nchw.begin(), nchw.end()), dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::acdb);
}

dnnl::memory::desc desc_of(const Tensor& t) {
  if (const auto* l = dynamic_cast<const DnnlLayout*>(t.layout())) return l->desc();
  if (const auto* l = dynamic_cast<const PackedConstantLayout*>(t.layout())) return l->packed_desc();
  return plain_desc(t.dtype(), t.dims());
}

bool is_plain_desc(const dnnl::memory::desc& md) {
  if (md.data.format_kind != dnnl_blocked || md.data.format_desc.blocking.inner_nblks != 0) return false;
  const int n = md.data.ndims;
  int64_t expect = 1;
  for (int i = n - 1; i >= 0; --i) {
    // A unit dim's stride does not matter for addressing.
    if (md.data.dims[i] != 1 && md.data.format_desc.blocking.strides[i] != expect) return false;
    expect *= md.data.dims[i];
  }
  for (int i = 0; i < n; ++i)
    if (md.data.padded_dims[i] != md.data.dims[i]) return false;
  return md.data.offset0 == 0;
}

std::string describe_desc(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind == dnnl_format_kind_any) return "any";
  if (d.format_kind != dnnl_blocked) return "opaque";
  const int n = d.ndims;
  // Activation-style letters for the usual ranks (n, c, then spatial), generic a, b, c... otherwise.
  static const char* kNames[] = {"", "a", "nc", "ncw", "nchw", "ncdhw"};
  std::string letters = n <= 5 ? kNames[n] : std::string();
  for (int i = static_cast<int>(letters.size()); i < n; ++i) letters.push_back(static_cast<char>('a' + i));
  const auto& b = d.format_desc.blocking;
  std::vector<bool> blocked(n, false);
  for (int k = 0; k < b.inner_nblks; ++k) blocked[b.inner_idxs[k]] = true;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string s;
  for (int i : order) s.push_back(blocked[i] ? static_cast<char>(std::toupper(letters[i])) : letters[i]);
  for (int k = 0; k < b.inner_nblks; ++k) s += std::to_string(b.inner_blks[k]) + letters[b.inner_idxs[k]];
  return s;
}

std::string DnnlLayout::describe() const { return describe_desc(md_); }

Result<Tensor> DnnlLayout::to_plain(const Tensor& self) const {
  return reorder_to(self, plain_desc(self.dtype(), self.dims()));
}

std::string PackedConstantLayout::describe() const { return "packed " + describe_desc(packed_); }

Result<Tensor> PackedConstantLayout::to_plain(const Tensor& self) const {
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(self.dtype(), self.dims()));
  reorder(dnnl::memory(packed_, engine(), const_cast<void*>(self.raw())),
          dnnl::memory(plain_view_, engine(), out.raw()));
  return out;
}

Tensor adopt_packed(const Tensor& original, const Tensor& packed, const dnnl::memory::desc& packed_md,
                    const dnnl::memory::desc& plain_view) {
  // Only layouts oneDNN can reorder back (not e.g. the Winograd weight format): to_plain must work.
  try {
    dnnl::reorder::primitive_desc check(engine(), packed_md, engine(), plain_view);
    (void)check;
  } catch (const dnnl::error&) {
    return Tensor();
  }
  auto keep = std::make_shared<Tensor>(packed);
  Tensor t = Tensor::wrap(original.dtype(), original.dims(), const_cast<void*>(packed.raw()),
                          std::shared_ptr<void>(keep, keep.get()));
  t.set_layout(std::make_shared<PackedConstantLayout>(packed_md, plain_view));
  return t;
}

dnnl::memory as_memory(const Tensor& t, const dnnl::memory::desc& md) {
  return dnnl::memory(md, engine(), const_cast<void*>(t.raw()));
}

dnnl::memory as_memory(const Tensor& t) { return as_memory(t, desc_of(t)); }

const dnnl::memory& BoundMemory::bind(const dnnl::memory::desc& md, const Tensor& t) {
  const void* data = t.raw();
  if (!mem_) {
    mem_ = dnnl::memory(md, engine(), const_cast<void*>(data));
  } else if (data != data_) {
    mem_.set_data_handle(const_cast<void*>(data));  // (zero-pads a padded layout, as creation does)
  }
  data_ = data;
  return mem_;
}

namespace {

Result<Tensor> alloc_tensor(DType t, const std::vector<int64_t>& dims, const dnnl::memory::desc& md, bool zero) {
  FERRY_ASSIGN_OR_RETURN(int64_t numel, checked_numel(dims));
  (void)numel;
  const size_t bytes = md.get_size();
  if (static_cast<int64_t>(bytes) > max_tensor_bytes())
    return Status::error(ErrorCode::kOutOfRange, "tensor of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                                                     std::to_string(max_tensor_bytes()) + " bytes");
  const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, rounded);
  if (!p) return Status::error(ErrorCode::kOutOfRange, "out of memory");
  if (zero) std::memset(p, 0, rounded);
  std::shared_ptr<void> keep(p, std::free);
  Tensor out = Tensor::wrap(t, dims, p, std::move(keep));
  // Bytes of another type than the tensor's (bf16 storage of float32 values) are never "plain".
  if (!is_plain_desc(md) || md.data_type() != dnnl_dtype(t)) out.set_layout(std::make_shared<DnnlLayout>(md));
  return out;
}

struct ReorderCache {
  std::mutex mu;
  std::vector<std::pair<std::pair<dnnl::memory::desc, dnnl::memory::desc>, dnnl::reorder>> entries;

  dnnl::reorder get(const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [key, prim] : entries)
      if (key.first == src && key.second == dst) return prim;
    dnnl::reorder r(dnnl::reorder::primitive_desc(engine(), src, engine(), dst));
    entries.push_back({{src, dst}, r});
    return r;
  }
};

ReorderCache& reorder_cache() {
  static ReorderCache c;
  return c;
}

}  // namespace

Result<Tensor> make_tensor(DType t, const std::vector<int64_t>& dims, const dnnl::memory::desc& md) {
  return alloc_tensor(t, dims, md, false);
}

Result<Tensor> make_tensor_zeroed(DType t, const std::vector<int64_t>& dims, const dnnl::memory::desc& md) {
  return alloc_tensor(t, dims, md, true);
}

Result<Tensor> new_output(ops::KernelContext& ctx, int i, DType t, const std::vector<int64_t>& dims,
                          const dnnl::memory::desc& md, bool keep_blocked) {
  const bool same_type = md.data_type() == dnnl_dtype(t);
  if (same_type && is_plain_desc(md)) {
    FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output_uninit(i, t, dims));
    return *out;
  }
  FERRY_ASSIGN_OR_RETURN(int64_t n, checked_numel(dims));
  // A result handed on as it is sits in the planned slot when it fits: nhwc and whole-block layouts take
  // exactly the plain size, bf16 storage of float32 values half of it (a fresh buffer per run would cost
  // its page faults: 1-2 ms per 25 MB tensor at resnet50 batch 8). Padded layouts are larger.
  const size_t plain_bytes = static_cast<size_t>(n) * dtype_size(t);
  if (!keep_blocked || md.get_size() > plain_bytes || (same_type && md.get_size() != plain_bytes))
    return make_tensor(t, dims, md);
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output_uninit(i, t, dims));
  Tensor blocked = *out;
  blocked.set_layout(std::make_shared<DnnlLayout>(md));
  return blocked;
}

Tensor rounded_to_bf16(const Tensor& t) {
  Tensor r(DType::kFloat32, t.dims());
  ops::round_float_array(DType::kBFloat16, t.data<float>(), r.data<float>(), t.numel());
  return r;
}

Result<const ops::OpSchema*> reference_kernel_of(const ir::Node& node) {
  const ops::OpSchema* reference = ops::OpRegistry::global().find(node.domain, node.op_type, node.opset);
  if (!reference) return Status::unsupported(node.label() + ": no reference kernel to fall back on");
  return reference;
}

bool is_reference_impl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

Status run_reference_on_plain(const ops::OpSchema& reference, const ir::Node& node, ops::KernelContext& ctx,
                              const std::vector<int>& round_bf16) {
  auto rounds = [&](int i) { return std::find(round_bf16.begin(), round_bf16.end(), i) != round_bf16.end(); };
  bool as_is = true;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_value(i)->is_tensor() && (!ctx.input(i).is_plain() || rounds(i))) as_is = false;
  if (as_is) return reference.kernel(ctx);
  std::vector<RtValue> plain(ctx.num_inputs());
  std::vector<const RtValue*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const RtValue* v = ctx.input_value(i);
    if (ctx.has_input(i) && v->is_tensor() && (!v->tensor.is_plain() || rounds(i))) {
      FERRY_ASSIGN_OR_RETURN(Tensor p, v->tensor.plain());
      if (rounds(i) && p.dtype() == DType::kFloat32) p = rounded_to_bf16(p);
      plain[i] = RtValue(std::move(p));
      v = &plain[i];
    }
    inputs.push_back(v);
  }
  ops::KernelContext sub(node, inputs, ctx.runner());
  FERRY_RETURN_IF_ERROR(reference.kernel(sub));
  ctx.outputs() = std::move(sub.outputs());
  return Status();
}

Status set_output(ops::KernelContext& ctx, int i, Tensor result, bool keep_blocked) {
  if (result.is_plain() || keep_blocked) {
    ctx.set_output(i, std::move(result));
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output_uninit(i, result.dtype(), result.dims()));
  if (result.numel() == 0) return Status();
  try {
    reorder(as_memory(result), as_memory(*out));
  } catch (const dnnl::error& e) {
    return Status::internal(std::string("oneDNN reorder failed: ") + e.what());
  }
  return Status();
}

void reorder(const dnnl::memory& src, const dnnl::memory& dst) {
  dnnl::reorder r = reorder_cache().get(src.get_desc(), dst.get_desc());
  r.execute(stream(), const_cast<dnnl::memory&>(src), const_cast<dnnl::memory&>(dst));
  stream().wait();
}

Result<Tensor> reorder_to(const Tensor& src, const dnnl::memory::desc& md) {
  const dnnl::memory::desc from = desc_of(src);
  if (from == md) return src;
  return reorder_view(src, from, md);
}

Result<Tensor> reorder_view(const Tensor& src, const dnnl::memory::desc& from, const dnnl::memory::desc& md) {
  if (dnnl_dtype(src.dtype()) == dt::undef)
    return Status::unsupported("cannot reorder a " + std::string(dtype_name(src.dtype())) + " tensor");
  FERRY_ASSIGN_OR_RETURN(Tensor out, make_tensor(src.dtype(), src.dims(), md));
  if (src.numel() == 0) return out;
  try {
    reorder(as_memory(src, from), as_memory(out, md));
  } catch (const dnnl::error& e) {
    return Status::internal(std::string("oneDNN reorder failed: ") + e.what());
  }
  return out;
}

namespace {

struct LayoutAwareOps {
  std::mutex mu;
  std::set<std::pair<std::string, std::string>> ops;
};

LayoutAwareOps& layout_aware() {
  static LayoutAwareOps s;
  return s;
}

bool reads_value(const ir::Graph& g, const ir::Value* v) {
  for (const auto& n : g.nodes) {
    for (const ir::Value* in : n->inputs)
      if (in == v) return true;
    for (const ir::Graph* sg : n->subgraphs())
      if (reads_value(*sg, v)) return true;
  }
  for (const ir::Value* o : g.outputs)
    if (o == v) return true;
  return false;
}

}  // namespace

void declare_layout_aware(const std::string& domain, const std::string& op_type) {
  std::lock_guard<std::mutex> lock(layout_aware().mu);
  layout_aware().ops.insert({domain, op_type});
}

namespace {

// Whether the cpu backend runs `n` (default options: what it supports does not depend on them).
bool cpu_runs(const ir::Node& n) {
  static const std::unique_ptr<Backend> backend = make_cpu_backend(BackendOptions{});
  return backend->supports(n);
}

}  // namespace

bool consumer_takes_layouts(const ir::Node& consumer) {
  if (!cpu_runs(consumer)) return false;  // also fills the table, which declares the ops
  std::lock_guard<std::mutex> lock(layout_aware().mu);
  return layout_aware().ops.count({consumer.domain, consumer.op_type}) != 0;
}

bool stores_bf16(const Tensor& t) {
  const auto* l = dynamic_cast<const DnnlLayout*>(t.layout());
  return l && t.dtype() == DType::kFloat32 && l->desc().data_type() == dt::bf16;
}

dnnl::memory::desc with_data_type(const dnnl::memory::desc& md, dnnl::memory::data_type type) {
  dnnl_memory_desc_t d = md.data;  // strides and offsets count elements, so only the type changes
  d.data_type = static_cast<dnnl_data_type_t>(type);
  return dnnl::memory::desc(d);
}

namespace {

bool is_conv(const ir::Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") || (n.domain == "com.ferry" && n.op_type == "FusedConv");
}

bool is_pool(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "MaxPool" || n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool" ||
                              n.op_type == "GlobalMaxPool");
}

struct Reader {
  const ir::Node* node;
  int input;
};

// The nodes of v's graph that read v, with the input position; nullopt when v also leaves the graph
// (a graph output) or a subgraph reads it: then no kernel may hand it on in a layout of its own.
std::optional<std::vector<Reader>> local_readers(const ir::Value& v) {
  const ir::Graph* g = v.graph;
  if (!g) return std::nullopt;
  if (const passes::Uses* uses = passes::PreparingUses::of(g)) {
    if (uses->is_output(&v) || uses->read_by_subgraph(&v)) return std::nullopt;
    std::vector<Reader> readers;
    for (const ir::Node* n : uses->users(&v))
      for (int i = 0; i < n->num_inputs(); ++i)
        if (n->inputs[i] == &v) readers.push_back({n, i});
    return readers;
  }
  for (const ir::Value* o : g->outputs)
    if (o == &v) return std::nullopt;
  std::vector<Reader> readers;
  for (const auto& n : g->nodes) {
    for (const ir::Graph* sg : n->subgraphs())
      if (reads_value(*sg, &v)) return std::nullopt;
    for (int i = 0; i < n->num_inputs(); ++i)
      if (n->inputs[i] == &v) readers.push_back({n.get(), i});
  }
  return readers;
}

}  // namespace

bool only_rounded_to_bf16(const ir::Value& v) {
  const auto readers = local_readers(v);
  if (!readers || readers->size() != 1) return false;
  const ir::Node& n = *readers->front().node;
  return n.domain == "com.ferry" && n.op_type == "RoundFloat" && n.attr_int("to", 0) == 16;
}

bool readers_take_bf16_storage(const ir::Value& v) {
  const auto readers = local_readers(v);
  if (!readers || readers->empty()) return false;
  for (const Reader& r : *readers) {
    // X or the residual Z of a cpu conv: it reorders them into the layout and type its primitive reads.
    // X of a cpu pooling: it pools in bf16 or converts X to float32 first.
    const bool conv_reads = is_conv(*r.node) && (r.input == 0 || r.input == 3);
    const bool pool_reads = is_pool(*r.node) && r.input == 0;
    if (!(conv_reads || pool_reads) || !consumer_takes_layouts(*r.node)) return false;
  }
  return true;
}

namespace {

bool is_matmul_family(const ir::Node& n) {
  return (n.domain.empty() && (n.op_type == "MatMul" || n.op_type == "Gemm")) ||
         (n.domain == "com.ferry" && n.op_type == "FusedMatMul");
}

// Ops whose outputs hold (some of) input 0's values unchanged, in another shape or order.
bool only_moves_values(const ir::Node& n) {
  static const std::set<std::string> kOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                             "Transpose", "Slice", "Split"};
  return n.domain.empty() && kOps.count(n.op_type) != 0;
}

}  // namespace

bool readers_convert_to_bf16(const ir::Value& v, const CpuOptions& o) {
  const auto readers = local_readers(v);
  if (!readers || readers->empty()) return false;
  for (const Reader& r : *readers) {
    const ir::Node& n = *r.node;
    if (only_moves_values(n) && r.input == 0) {
      for (const ir::Value* y : n.outputs)
        if (y && !readers_convert_to_bf16(*y, o)) return false;
      continue;
    }
    const bool operand = (is_matmul_family(n) && (r.input == 0 || r.input == 1)) ||
                         (n.domain == "com.ferry" && n.op_type == "FusedAttention" && r.input <= 2);
    // The reader reads it once only: a value that is also its bias or mask would go unrounded there.
    int reads = 0;
    for (const ir::Value* in : n.inputs) reads += in == &v;
    if (!operand || reads != 1 || !wants_native_bf16(n, o) || !cpu_runs(n)) return false;
  }
  return true;
}

bool rounded_for_bf16_matmuls(const ir::Value& v, const CpuOptions& o) {
  if (!only_rounded_to_bf16(v)) return false;
  const ir::Value* rounded = local_readers(v)->front().node->outputs[0];
  const auto readers = rounded ? local_readers(*rounded) : std::nullopt;
  if (!readers || readers->empty()) return false;
  for (const Reader& r : *readers) {
    const ir::Node& n = *r.node;
    int reads = 0;
    for (const ir::Value* in : n.inputs) reads += in == rounded;
    if (!is_matmul_family(n) || r.input != 0 || reads != 1 || !wants_native_bf16(n, o) || !cpu_runs(n)) return false;
  }
  return true;
}

bool read_as_bf16_by_attention(const ir::Value& v, const CpuOptions& o) {
  const auto readers = local_readers(v);
  if (!readers || readers->empty()) return false;
  for (const Reader& r : *readers) {
    const ir::Node& n = *r.node;
    int reads = 0;
    for (const ir::Value* in : n.inputs) reads += in == &v;
    if (!(n.domain == "com.ferry" && n.op_type == "FusedAttention") || r.input > 2 || reads != 1 ||
        !wants_native_bf16(n, o) || !cpu_runs(n))
      return false;
  }
  return true;
}

bool may_produce_blocked(const ir::Value& v) {
  const auto readers = local_readers(v);
  if (!readers || readers->empty()) return false;
  for (const Reader& r : *readers)
    if (!consumer_takes_layouts(*r.node)) return false;
  return true;
}

}  // namespace ferry::backends::cpu
