// Copies a strided view of a float buffer into a dense one (Transpose and Slice on the cpu backend).
// When the view's innermost dims are contiguous in the source, whole runs are memcpy'd by OpenMP
// threads; oneDNN's generic reorder walks such views element by element and is no faster than the
// reference kernels there.
#pragma once
#include <cstdint>
#include <vector>

namespace ferry::backends::cpu {

struct StridedView {
  std::vector<int64_t> dims;     // the output's dims
  std::vector<int64_t> strides;  // source strides (elements) per output dim
  int64_t offset = 0;            // source offset (elements) of element 0
  int64_t run = 1;               // contiguous elements per copy (computed by plan_strided_copy)
  int outer_rank = 0;            // dims [0, outer_rank) are walked; the rest form one run
};

// Fills `run` / `outer_rank`; false when the innermost source stride is not 1 (no contiguous runs).
bool plan_strided_copy(StridedView& v);
// dst (dense, v.dims) = the view of src.
void strided_copy(const StridedView& v, const float* src, float* dst);

}  // namespace ferry::backends::cpu
