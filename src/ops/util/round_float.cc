#include "ops/util/round_float.h"

namespace ferry::ops {

void round_float_array(DType to, const float* x, float* y, int64_t n) {
  if (to == DType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) y[i] = float16::to_float(float16::from_float(x[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = bfloat16::to_float(bfloat16::from_float(x[i]));
  }
}

}  // namespace ferry::ops
