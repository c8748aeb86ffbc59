// Vectorized float32 Softmax / LogSoftmax along a non-innermost axis: the input viewed as
// [outer, axis, inner] with inner > 1, vectorized across `inner` (contiguous) while reducing over `axis`
// (stride inner). oneDNN 2.6 serves such axes only with its reference softmax (0.02 GFLOP/s: a YOLO
// head's DFL softmax over axis 2 of [1,4,16,8400], a Softmax over channels); compiled per x86 ISA with
// Highway, picked at run time.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ferry::backends::cpu {

// y = softmax(x) (log: log-softmax) over the middle dim of [outer, axis, inner]; x and y may not alias.
void vec_softmax_strided(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log);

// x[i] = exp(x[i] - max(x)) for i < n, in place, on this thread; returns their sum (vector partial sums).
// A softmax row before its division (FusedAttention's row tiles divide the output rows instead);
// a NaN in x, or +inf, makes the sum NaN.
float vec_exp_minus_max(float* x, size_t n);

}  // namespace ferry::backends::cpu
