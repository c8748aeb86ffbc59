#include "backends/cpu/strided_copy.h"

#include <cstring>

namespace ferry::backends::cpu {

bool plan_strided_copy(StridedView& v) {
  const int r = static_cast<int>(v.dims.size());
  if (r == 0) {
    v.run = 1;
    v.outer_rank = 0;
    return true;
  }
  // The innermost dim that is not 1 must be contiguous: else every run is one element (a transpose
  // whose last output dim has size 1 and whose next one is strided, maxvit's window departition, was
  // copied float by float), and oneDNN's reorder does better.
  int inner = r - 1;
  while (inner > 0 && v.dims[inner] == 1) --inner;
  if (v.strides[inner] != 1 && v.dims[inner] != 1) return false;
  int64_t run = 1;
  int k = r;
  // Extend the run while dim k-1 continues it (its stride equals the run so far, or it has size 1).
  while (k > 0 && (v.dims[k - 1] == 1 || v.strides[k - 1] == run)) {
    run *= v.dims[k - 1];
    --k;
  }
  v.run = run;
  v.outer_rank = k;
  return true;
}

void strided_copy(const StridedView& v, const float* src, float* dst) {
  int64_t outer = 1;
  for (int i = 0; i < v.outer_rank; ++i) outer *= v.dims[i];
  const int64_t run = v.run;
  if (outer == 0 || run == 0) return;
  const int k = v.outer_rank;
  // Small copies are not worth waking threads for.
  const bool parallel = outer * run >= (1 << 15) && outer > 1;
#pragma omp parallel for if (parallel)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, off = v.offset;
    for (int i = k - 1; i >= 0; --i) {
      off += (rem % v.dims[i]) * v.strides[i];
      rem /= v.dims[i];
    }
    std::memcpy(dst + o * run, src + off, static_cast<size_t>(run) * sizeof(float));
  }
}

}  // namespace ferry::backends::cpu
