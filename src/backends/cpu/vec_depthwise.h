// The vectorized inner loop of the cpu backend's own depthwise convolution (depthwise_conv.cc):
// channels-last float32 input and output, one filter per channel, bias and an elementwise post-op
// chain applied in registers. Compiled per x86 ISA with Highway, picked at run time.
#pragma once
#include <cstdint>
#include <string>

namespace ferry::backends::cpu {

// Geometry of a 2-D depthwise convolution (channels-last). Pads are the leading ones; the trailing
// pads only show in the output sizes.
struct DepthwiseShape {
  int64_t channels = 0;  // C (input = output channels)
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t k_h = 0, k_w = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_h = 0, pad_w = 0;
};

// The elementwise ops the kernel applies to each result, in order (the FusedConv post-ops it covers).
enum class DepthwiseAct { kRelu, kLeakyRelu, kClip, kSigmoid, kSilu, kHardSigmoid, kHardSwish, kTanh, kElu, kAbs, kMul, kAdd };
struct DepthwisePostOp {
  DepthwiseAct act;
  float alpha = 0, beta = 0;  // LeakyRelu/Elu alpha; Clip [alpha, beta]; HardSigmoid alpha*x+beta; Mul/Add alpha
};

// The weights' channel stride: C rounded up to 16 (whole AVX-512 vectors; the padding is zero).
inline int64_t depthwise_padded_channels(int64_t c) { return (c + 15) / 16 * 16; }

// Output rows [row_begin, row_end) of one image, channels [c_begin, c_end) (c_begin a multiple of 16).
// x: the image, [in_h, in_w, C]; w: [k_h * k_w, padded C] (depthwise_padded_channels); bias: padded C
// floats (zeros when the node has none); y: the image's output, [out_h, out_w, C].
void vec_depthwise_rows(const float* x, const float* w, const float* bias, float* y, const DepthwiseShape& s,
                        const DepthwisePostOp* ops, int num_ops, int64_t row_begin, int64_t row_end, int64_t c_begin,
                        int64_t c_end);

}  // namespace ferry::backends::cpu
