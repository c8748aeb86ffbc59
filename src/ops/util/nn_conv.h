// The direct convolution loop shared by Conv, ConvInteger and QLinearConv, plus the attribute and
// shape checks they have in common. Inputs are converted to the accumulator type first (double for
// floats, int64 for quantized ints with zero points already subtracted), so out-of-bounds taps simply
// contribute nothing, which is exactly zero padding (or x_zero_point padding for the integer ops).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/util/nn_common.h"

namespace ferry::ops::nn {

// y[N, M, out] += conv(x[N, C, in], w[M, C/group, k]); y must be initialised (bias or zero).
// Cost O(N * M * C/group * out * kernel).
template <class Acc>
void conv_direct(const Acc* x, const Acc* w, Acc* y, int64_t N, int64_t C, int64_t M, int64_t group,
                 const Window3& g);

// Checked Conv-family geometry for x [N, C, spatial...] and w [M, C/group, k...].
struct ConvSetup {
  int64_t N = 0, C = 0, M = 0, group = 1;
  WindowGeom geom;
  Window3 win;
  std::vector<int64_t> out_dims;  // [N, M, out...]
};
Result<ConvSetup> conv_setup(const ir::Node& node, const Tensor& x, const Tensor& w);

// The float Conv reference in double: checks B (1-D, M values; errors name `op`), then returns
// conv(x, w) + b over s.out_dims, row-major (Conv stores it, FusedConv applies its post-ops first).
Result<std::vector<double>> conv_float_reference(const std::string& op, const ConvSetup& s, const Tensor& x,
                                                 const Tensor& w, const Tensor* b);

// Inference for Conv-family ops: output [N, M, out...] of dtype `out_dtype`.
Status infer_conv(InferContext& ctx, DType out_dtype, int x_input, int w_input);

}  // namespace ferry::ops::nn
