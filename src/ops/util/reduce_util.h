// Helpers shared by the reduction-like ops (Reduce*, ArgMax/ArgMin, Softmax family, normalizations,
// CumSum, TopK, losses): axis splitting, reduction masks, accumulator types and safe casts.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace ferry::ops {

// A tensor viewed as [outer, n, inner] around one axis: element (o, k, i) is at (o * n + k) * inner + i.
struct AxisSplit {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * n + k) * inner + i; }
};
// Split around dims[axis] (axis already normalized).
AxisSplit split_at_axis(const std::vector<int64_t>& dims, int64_t axis);
// The pre-opset-13 Softmax/Hardmax view: the input coerced to 2D [prod(dims[:axis]), prod(dims[axis:])],
// returned as outer = rows, n = cols, inner = 1. axis may equal the rank (then cols = 1).
AxisSplit split_2d(const std::vector<int64_t>& dims, int64_t axis);

// Normalizes `axes` against `rank` into a per-axis mask; out-of-range and repeated axes are errors.
Result<std::vector<bool>> axes_to_mask(const std::vector<int64_t>& axes, int64_t rank);
// Dims after reducing the masked axes (kept as 1 when keepdims, dropped otherwise).
std::vector<int64_t> reduced_dims(const std::vector<int64_t>& dims, const std::vector<bool>& mask, bool keepdims);
// The same on graph-level shapes.
Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdims);

// Calls f(in_index, out_index) for every input element in row-major order, where out_index is the flat
// index (in the reduced layout) of the output element it reduces into.
template <class F>
void for_each_reduce(const std::vector<int64_t>& dims, const std::vector<bool>& mask, F&& f) {
  const int r = static_cast<int>(dims.size());
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  // Output strides over the kept axes; 0 on reduced axes so they all land on one output element.
  std::vector<int64_t> ostride(r, 0);
  int64_t acc = 1;
  for (int d = r - 1; d >= 0; --d) {
    if (!mask[d]) {
      ostride[d] = acc;
      acc *= dims[d];
    }
  }
  std::vector<int64_t> idx(r, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, o);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) {
        o += ostride[d];
        break;
      }
      o -= ostride[d] * (dims[d] - 1);
      idx[d] = 0;
    }
  }
}

// Accumulator for a reduction over T: double for every floating type (halves included), a 64-bit
// integer of the same signedness for integers and bool.
template <class T>
using acc_t = std::conditional_t<is_float_like_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Converts a double to T. For integer T, NaN becomes 0 and out-of-range values saturate, so a result
// like log(0) never triggers undefined behaviour.
template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (is_float_like_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T{0};
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// Reads element i of any storage type as double.
template <class T>
double to_double(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

// The attribute `axis`, normalized against rank, naming the op on error.
Result<int64_t> axis_attr(const ir::Node& node, int64_t dflt, int64_t rank);

// The values of `param` broadcast (numpy style, right-aligned) against the trailing dims of `x_dims` that
// it covers: a vector of prod(x_dims[rank - param.rank():]) doubles, so element i of x pairs with entry
// i % size. Fails naming `what` when param does not broadcast to x.
Result<std::vector<double>> expand_trailing(const Tensor& param, const std::vector<int64_t>& x_dims,
                                            const std::string& what);

// Inference helper: output `i` gets `dtype` and the shape of input 0 (when known).
void set_output_like_input(InferContext& ctx, int out, DType dtype);

}  // namespace ferry::ops
