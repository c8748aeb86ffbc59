// Rounding float32 values to fp16 / bf16 and back (round to nearest even; out-of-range -> +-Inf for
// fp16): what the RoundFloat op computes and what passes/precision applies to constant weights.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace ferry::ops {

// y[i] = float(to(x[i])) for `to` kFloat16 or kBFloat16; x may equal y.
void round_float_array(DType to, const float* x, float* y, int64_t n);

}  // namespace ferry::ops
