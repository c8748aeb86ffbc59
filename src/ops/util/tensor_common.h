// Helpers shared by the tensor-manipulation ops (Shape, Reshape, Slice, Gather, Pad, ...): input
// access with clear errors, integer-list inputs, dtype-agnostic element copies, and inference-time
// evaluation of small constant-foldable subgraphs so shape computations (Shape -> Gather -> Concat ->
// Reshape) give static shapes.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "ops/op.h"
#include "ops/util/broadcast.h"

namespace ferry::ops::tensor_ops {

// Input i as a tensor; errors (naming `what`) when missing or not a tensor.
Result<const Tensor*> tensor_input(const KernelContext& ctx, int i, const char* what);
// True when input i is present and a tensor.
bool has_tensor_input(const KernelContext& ctx, int i);

// The elements of an integer tensor (any int dtype) as int64; error for non-integer dtypes.
Result<std::vector<int64_t>> int_values(const Tensor& t, const char* what);
// Same for a 0-d or 1-element tensor.
Result<int64_t> int_scalar(const Tensor& t, const char* what);

std::string dtype_str(DType t);
Status unsupported_dtype(const char* op, DType t);

// Copies `n` elements of `elem_size` bytes.
inline void copy_elems(void* dst, const void* src, int64_t n, size_t elem_size) {
  if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * elem_size);
}

// Strided gather: the output element at multi-index idx (row-major over out_dims) is the source element
// at base + sum(idx[d] * src_strides[d]) (in elements). Strides may be zero or negative.
void strided_copy(const void* src, int64_t base, const std::vector<int64_t>& src_strides, void* dst,
                  const std::vector<int64_t>& out_dims, size_t elem_size);

// Normalises `axes` (possibly negative) against `rank`, rejecting out-of-range and (when `unique`)
// repeated axes.
Result<std::vector<int64_t>> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, bool unique = true);

// Converts an index that may be negative (counting from the end) for an axis of size `dim`, failing with
// a message naming the index when it is outside [-dim, dim).
Result<int64_t> normalize_index(int64_t index, int64_t dim, const char* what);

// Builds a Constant node's tensor from whichever value attribute it has.
Result<Tensor> constant_node_value(const ir::Node& node);

// Inference: the value of input i when it can be known at compile time: an initializer, a Constant, or
// a small subgraph of shape-computation ops over such values and static shapes (evaluated with the
// reference kernels). Null when unknown.
std::optional<Tensor> known_value(const InferContext& ctx, int i);
std::optional<Tensor> known_value_of(const ir::Value* v);
// The same as int64 values (integer dtypes only).
std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, int i);

// One entry of a shape-like input at inference: a known number (`value`, possibly negative, e.g.
// Reshape's -1), or a stand-in for a dim of some tensor's shape that is not static (`dim`, symbolic or
// unknown), e.g. Concat(Shape(x)[0:1], [-1]) with x: [batch, 12] gives {dim "batch"}, {value -1}.
struct ShapeEntry {
  std::optional<int64_t> value;
  Dim dim;  // Dim(value) for known values >= 0
};
// The entries of a 0-/1-D integer input when each one is known or stands for a shape dim; nullopt else.
std::optional<std::vector<ShapeEntry>> known_shape_entries(const InferContext& ctx, int i);

// Concat's output dims for inputs `xs` along `axis` (may be negative): same dtype and rank, equal dims
// off the axis; errors name the input that differs. Concat and com.ferry FusedBatchNorm share it.
Result<std::vector<int64_t>> concat_dims(const std::vector<const Tensor*>& xs, int64_t axis);
// Copies `xs` one after the other along `axis` into `out` (dims from concat_dims, same dtype).
void concat_copy(const std::vector<const Tensor*>& xs, int64_t axis, Tensor& out);
// Shape inference of a concatenation of every input along the node's `axis` attribute.
Status infer_concat(InferContext& ctx);

// Inference helpers: the static dims of input i, or nullopt.
std::optional<std::vector<int64_t>> static_input_dims(const InferContext& ctx, int i);
// A Shape with `rank` unknown dims.
Shape unknown_dims(int64_t rank);

}  // namespace ferry::ops::tensor_ops
