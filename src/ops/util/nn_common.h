// Helpers shared by the ops-nn group (convolution, pooling, matmul, quantization, resize...):
// input access with clear errors, dtype conversion to/from double, and window geometry
// (kernel/stride/dilation/pads/auto_pad -> output size) that Conv, ConvTranspose and the pools share.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace ferry::ops::nn {

// Tensor input i; an error naming the op and input when it is missing or not a tensor.
Result<const Tensor*> tensor_in(const KernelContext& ctx, int i, const char* what);
// Like tensor_in, but an omitted optional input gives nullptr.
Result<const Tensor*> optional_tensor_in(const KernelContext& ctx, int i, const char* what);

Status bad_dtype(const KernelContext& ctx, const Tensor& t, const char* what);

// All elements as double (one dtype dispatch, not one per element).
std::vector<double> to_doubles(const Tensor& t);
// All elements as int64 (integer and bool tensors; floats truncate).
std::vector<int64_t> to_int64s(const Tensor& t);
// Writes v into a floating tensor (rounding through float for halves).
void store_doubles(Tensor& t, const double* v);
// Writes v into an integer tensor, wrapping like a C++ cast (two's complement truncation).
void store_int64s(Tensor& t, const int64_t* v);



// A quantization parameter that is a scalar or a 1-D tensor of n values, broadcast to n values;
// `dflt` everywhere when absent. Errors name the op and the parameter.
Result<std::vector<double>> per_channel_param(const KernelContext& ctx, const Tensor* t, int64_t n, double dflt,
                                              const char* what);
// Saturating round-half-to-even of v into the range of an 8/16/32-bit integer dtype.
int64_t saturate_round(double v, DType t);
bool is_quant_int8(DType t);  // int8 or uint8
// v rounded to the precision of a floating dtype (float16, bfloat16, float32; double unchanged).
double round_to_dtype(double v, DType t);

// Window attributes (kernel, stride, dilation, pad) past this are rejected, so size arithmetic cannot overflow.
inline constexpr int64_t kMaxWindowAttr = int64_t{1} << 24;

// The spatial window of a sliding-window op, after auto_pad and ceil_mode are applied.
struct WindowGeom {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  int rank() const { return static_cast<int>(in.size()); }
};

struct WindowOptions {
  bool use_dilations = true;  // AveragePool before opset 19 has none
  bool use_ceil_mode = false; // pools only
};

// Reads auto_pad/pads/strides/dilations/ceil_mode from the node and computes output sizes.
// Fails on bad attribute lengths or values and on empty outputs.
Result<WindowGeom> window_geometry(const ir::Node& node, const std::vector<int64_t>& in_spatial,
                                   const std::vector<int64_t>& kernel, WindowOptions opts);

// The same for inference: the output's spatial dims when the input's are static, else unknown dims.
// Returns nullopt on any inconsistency (the kernel reports it).
std::optional<std::vector<Dim>> infer_window_dims(const ir::Node& node, const Shape& x_shape,
                                                  const std::vector<int64_t>& kernel, WindowOptions opts);

// Canonical 3-D form of a 1-3-D window (leading unit dims), so kernels can use fixed loops.
struct Window3 {
  int64_t in[3], k[3], s[3], d[3], p[3], pe[3], out[3];  // p: leading pad, pe: trailing pad
};
Result<Window3> to_window3(const WindowGeom& g, const char* op);

}  // namespace ferry::ops::nn
