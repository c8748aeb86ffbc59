// oneDNN memory layouts for tensors kept between cpu kernels, and the helpers kernels use to move
// between ferry Tensors and dnnl::memory.
//
// A tensor in a oneDNN blocked layout (nChw16c, ...) keeps its logical ONNX dims; its storage holds
// desc.get_size() bytes (channels padded up to the block, the padding kept zero, which oneDNN's own
// primitives rely on) and its layout() is a DnnlLayout carrying the memory descriptor. Plain tensors
// have no layout; their descriptor is the dense row-major one (plain_desc).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "backends/backend_options.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::backends::cpu {

class DnnlLayout : public TensorLayout {
 public:
  explicit DnnlLayout(dnnl::memory::desc md) : md_(std::move(md)) {}
  const dnnl::memory::desc& desc() const { return md_; }
  std::string describe() const override;  // "nChw16c", "aBcd8b", ...
  Result<Tensor> to_plain(const Tensor& self) const override;

 private:
  dnnl::memory::desc md_;
};

// A constant (a weight) that a kernel prepacked and adopted (Kernel::adopt_constant): the storage holds
// the packed bytes in `packed`, the tensor keeps the original initializer's dims, and to_plain rebuilds
// the original row-major bytes through `plain_view`, a descriptor of those bytes in the packed
// descriptor's logical dims (e.g. a grouped conv's 5-D view of 4-D weights, or a transposed matmul B).
class PackedConstantLayout : public TensorLayout {
 public:
  PackedConstantLayout(dnnl::memory::desc packed, dnnl::memory::desc plain_view)
      : packed_(std::move(packed)), plain_view_(std::move(plain_view)) {}
  const dnnl::memory::desc& packed_desc() const { return packed_; }
  std::string describe() const override;  // "packed OIhw16i16o"
  Result<Tensor> to_plain(const Tensor& self) const override;

 private:
  dnnl::memory::desc packed_, plain_view_;
};
// The tensor to hand back from adopt_constant: `original`'s dtype and dims over `packed`'s storage
// (which it keeps alive), packed in `packed_md`; `plain_view` as in PackedConstantLayout. Undefined
// when oneDNN cannot reorder `packed_md` back to plain (then the original stays).
Tensor adopt_packed(const Tensor& original, const Tensor& packed, const dnnl::memory::desc& packed_md,
                    const dnnl::memory::desc& plain_view);

// oneDNN's data type for a ferry dtype; nullopt-like `undef` for dtypes oneDNN has no type for.
dnnl::memory::data_type dnnl_dtype(DType t);

// Dense row-major descriptor of `dims` (a rank-0 tensor is described as [1]).
dnnl::memory::desc plain_desc(DType t, const std::vector<int64_t>& dims);
// Dims between ferry's vectors and oneDNN's, and the row-major strides of `dims` (in elements).
dnnl::memory::dims to_dims(const std::vector<int64_t>& v);
std::vector<int64_t> dims_of(const dnnl::memory::desc& m);
std::vector<int64_t> dense_strides(const std::vector<int64_t>& dims);
// A plain float32 `t` repeated to `dims` (numpy broadcasting; `t` must broadcast to them).
Tensor broadcast_plain(const Tensor& t, const std::vector<int64_t>& dims);
// oneDNN's channels-last (acdb) float32 descriptor of a 4-D tensor of logical dims `nchw`: its bytes are
// the plain NHWC tensor.
dnnl::memory::desc channels_last_desc(const std::vector<int64_t>& nchw);
// The descriptor of a tensor's actual bytes: its DnnlLayout's, or plain_desc for plain tensors.
dnnl::memory::desc desc_of(const Tensor& t);
// Whether `md` is the dense row-major layout of its dims.
bool is_plain_desc(const dnnl::memory::desc& md);
// Text form of a descriptor's layout: a tag such as "nchw" / "nChw16c" / "OIhw16i16o" (upper case
// letters are blocked dims, followed by the inner blocks), or "any"/"opaque" when not blocked.
std::string describe_desc(const dnnl::memory::desc& md);

// A dnnl::memory over the tensor's storage (no copy). oneDNN does not write its inputs; the const
// overload exists so kernels can wrap inputs.
dnnl::memory as_memory(const Tensor& t);
dnnl::memory as_memory(const Tensor& t, const dnnl::memory::desc& md);  // md must describe t's bytes

// A dnnl::memory of one fixed descriptor, made once, whose buffer is rebound only when the tensor's
// bytes move: creating a memory object costs ~2k instructions (allocations, descriptor checks), a
// quarter of a small convolution's host time. A kernel keeps one per argument of each cached primitive;
// `md` must be the same at every call.
class BoundMemory {
 public:
  const dnnl::memory& bind(const dnnl::memory::desc& md, const Tensor& t);

 private:
  dnnl::memory mem_;
  const void* data_ = nullptr;
};

// A new tensor of logical `dims` whose storage follows `md` (64-byte aligned, md.get_size() bytes,
// not zero-filled: the caller's primitive writes every byte). Its layout is a DnnlLayout unless `md` is
// the plain layout. Fails cleanly past max_tensor_bytes().
Result<Tensor> make_tensor(DType t, const std::vector<int64_t>& dims, const dnnl::memory::desc& md);
// Same storage, zero-filled (for layouts with padding that are filled by a non-oneDNN writer).
Result<Tensor> make_tensor_zeroed(DType t, const std::vector<int64_t>& dims, const dnnl::memory::desc& md);

// Storage for output i of a kernel whose primitive writes layout `md`: when `md` is plain, the memory the
// runtime planned for that output (ctx.allocate_output_uninit, which also sets the output). A blocked
// `md` the kernel will hand on as it is (`keep_blocked`, as set_output's) and that fits the plain size
// (nhwc, nChw16c with whole blocks; bf16 storage of float32 values, half of it) gets the planned memory
// too, under its DnnlLayout, so it stays in the arena; any other gets make_tensor (a blocked result set_output reorders must not sit in
// the memory it is reordered into).
Result<Tensor> new_output(ops::KernelContext& ctx, int i, DType t, const std::vector<int64_t>& dims,
                          const dnnl::memory::desc& md, bool keep_blocked = false);
// The op's reference kernel, which a cpu kernel runs for what it does not cover (and whose errors word
// bad inputs as the op does); an error when the node has none.
Result<const ops::OpSchema*> reference_kernel_of(const ir::Node& node);
// Whether oneDNN chose one of its reference implementations ("ref:any", a few hundred MFLOP/s) for pd:
// the cpu kernels never take those (issue 22: no `ref:` primitive on the suite) and use another path.
bool is_reference_impl(const dnnl::primitive_desc_base& pd);
// A layout-aware kernel's fallback: the op's reference kernel on ctx, with every tensor input that arrived
// in a oneDNN layout made plain first (the reference kernels read plain bytes).
// `round_bf16`: inputs (float32) that are rounded to bf16 values in those copies, for a native-bf16 kernel
// whose readers_convert_to_bf16 input may arrive unrounded.
Status run_reference_on_plain(const ops::OpSchema& reference, const ir::Node& node, ops::KernelContext& ctx,
                              const std::vector<int>& round_bf16 = {});
// A copy of `t` (plain float32) with every value rounded to bf16 (RoundFloat's rounding).
Tensor rounded_to_bf16(const Tensor& t);
// Sets output i to `result`; a blocked result is reordered into the runtime's plain memory for the
// output unless `keep_blocked` (every consumer is a layout-aware cpu kernel).
Status set_output(ops::KernelContext& ctx, int i, Tensor result, bool keep_blocked);

// `src` converted to layout `md` (same logical dims) with a cached oneDNN reorder; `src` itself
// when it already has that layout.
Result<Tensor> reorder_to(const Tensor& src, const dnnl::memory::desc& md);
// The same with `src`'s bytes seen through `from` (e.g. a strided, transposed view of plain bytes),
// always a new tensor.
Result<Tensor> reorder_view(const Tensor& src, const dnnl::memory::desc& from, const dnnl::memory::desc& md);
// Reorders between two memories with a primitive cached by (src desc, dst desc).
void reorder(const dnnl::memory& src, const dnnl::memory& dst);

// Whether the cpu kernel that would run `consumer` reads blocked inputs without converting them
// (it is covered by the cpu backend and is one of the layout-aware kernels).
bool consumer_takes_layouts(const ir::Node& consumer);
// Whether a kernel producing `v` may leave it blocked: every consumer in v's graph takes layouts and
// `v` is not a graph output (nor read by a subgraph, which would convert it once per read).
bool may_produce_blocked(const ir::Value& v);

// bf16 storage of float32 values: a native-bf16 conv whose only reader is RoundFloat(to=16) writes its
// result in bf16 (oneDNN rounds to nearest even, as RoundFloat does), and the RoundFloat passes such a
// tensor on as it is when every reader is a cpu conv, which reads bf16 anyway, or a cpu pooling, which
// pools bf16 into bf16 where its own result is only rounded to bf16 (max and average of bf16 values
// rounded once, as RoundFloat would) or is a max read by such readers only, and converts to float32
// first otherwise. Nothing else ever sees
// one: the RoundFloat converts it back to float32 for other readers.
//
// Whether `t` (float32) holds bf16 bytes in a DnnlLayout.
bool stores_bf16(const Tensor& t);
// `md` with another element type (same dims, layout and strides).
dnnl::memory::desc with_data_type(const dnnl::memory::desc& md, dnnl::memory::data_type type);
// Whether v's only reader is a RoundFloat to bf16 (v no graph output, not read by a subgraph).
bool only_rounded_to_bf16(const ir::Value& v);
// Whether every reader of v is a cpu Conv/FusedConv reading it as X or as the residual Z, or a cpu
// pooling reading it as X.
bool readers_take_bf16_storage(const ir::Value& v);
// Whether every reader of v converts it to bf16 itself (round to nearest even, as RoundFloat does), so
// that a RoundFloat(to=16) writing v may hand its input on unrounded: a native-bf16 (wants_native_bf16)
// cpu MatMul, Gemm or FusedMatMul reading it as A or B, or FusedAttention as Q, K or V, directly or
// through ops that only move values (Reshape, Transpose, Slice, Split, ...) whose outputs are read so.
// Those kernels round such inputs themselves where they fall back to fp32 or to the reference kernel.
bool readers_convert_to_bf16(const ir::Value& v, const CpuOptions& o);
// Whether v's only reader is a RoundFloat to bf16 whose readers are all native-bf16 cpu MatMul, Gemm or
// FusedMatMul nodes reading it as A (once): a matmul producing v may write it in bf16 storage, which the
// RoundFloat hands on (readers_convert_to_bf16) and those matmuls read as it is.
bool rounded_for_bf16_matmuls(const ir::Value& v, const CpuOptions& o);
// Whether every reader of v is a native-bf16 cpu FusedAttention reading it (once) as Q, K or V: a
// Transpose producing v (the head split) may write it in bf16 storage, which the attention reads as it is.
bool read_as_bf16_by_attention(const ir::Value& v, const CpuOptions& o);

// Marks an op type whose cpu kernels accept layouts (called by the kernel files' register functions).
void declare_layout_aware(const std::string& domain, const std::string& op_type);

}  // namespace ferry::backends::cpu
