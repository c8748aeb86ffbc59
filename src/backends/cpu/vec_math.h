// Vectorized float32 math for the elementwise ops oneDNN has no (accurate enough) primitive for,
// compiled once per x86 ISA with Highway and picked at run time (HWY_DYNAMIC_DISPATCH): AVX-512,
// AVX2, SSE4 and a portable fallback. Erf comes from SLEEF (1.0-ULP kernels) on AVX-512 / AVX2; the
// others from Highway's contrib/math (a few ULP) or plain vector arithmetic.
#pragma once
#include <cstddef>
#include <string>

namespace ferry::backends::cpu {

enum class VecUnary {
  kLog, kErf, kSin, kCos, kAtan, kSoftplus, kSoftsign, kReciprocal, kFloor, kCeil, kRound,
  kRoundFp16, kRoundBf16  // com.ferry RoundFloat: to fp16 / bf16 and back (nearest even; fp16 overflow -> inf)
};

// y[i] = op(x[i]) for i < n; x and y may be the same array.
void vec_unary(VecUnary op, const float* x, float* y, size_t n);

// acc[j] += x[0 * stride + j] + ... + x[(rows - 1) * stride + j] for j < lanes (pixel-major data
// summed per channel: channels-last pooling; stride >= lanes, so a range of channels may be summed).
void vec_accumulate_rows(const float* x, size_t rows, size_t lanes, size_t stride, float* acc);

// x[0] + ... + x[n - 1] (vector partial sums, so not in sequential order).
float vec_sum(const float* x, size_t n);

// The name of the instruction set the dispatch picked on this CPU ("AVX3", "AVX2", ...).
std::string vec_math_target();

}  // namespace ferry::backends::cpu
