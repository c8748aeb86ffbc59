#include "backends/cpu/global_average.h"

#include <algorithm>
#include <vector>

#include <omp.h>

#include "backends/cpu/small_work.h"
#include "backends/cpu/vec_math.h"

namespace ferry::backends::cpu {

// The view for `md`, or false for any other layout (strided, other blockings, offsets, other types).
bool pixel_blocks(const dnnl::memory::desc& m, PixelBlocks* v) {
  const dnnl_memory_desc_t& d = m.data;
  if (d.data_type != dnnl_f32 || d.format_kind != dnnl_blocked || d.offset0 != 0 || d.ndims < 3) return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  int64_t pixels = 1;
  for (int i = 2; i < d.ndims; ++i) pixels *= d.padded_dims[i];
  const int64_t c = d.padded_dims[1];
  int64_t lanes = 0, blocks = 0;
  if (b.inner_nblks == 1 && b.inner_idxs[0] == 1) {
    lanes = b.inner_blks[0];
    blocks = c / lanes;
    if (b.strides[1] != pixels * lanes) return false;
  } else if (b.inner_nblks == 0 && b.strides[1] == 1) {  // nhwc
    lanes = c;
    blocks = 1;
  } else if (b.inner_nblks == 0 && b.strides[1] == pixels) {  // nchw
    lanes = 1;
    blocks = c;
  } else {
    return false;
  }
  int64_t unit = lanes;  // the pixels must be dense, in order, `lanes` floats apart
  for (int i = d.ndims - 1; i >= 2; --i) {
    if (b.strides[i] != unit) return false;
    unit *= d.padded_dims[i];
  }
  if (b.strides[0] != blocks * pixels * lanes) return false;
  *v = {d.padded_dims[0], blocks, pixels, lanes, b.strides[0], b.strides[1]};
  return true;
}

// Mean over the pixels of `x` (viewed as `v`) into plain [N, C] floats `out`. Each thread sums a
// range of pixels of a range of one block's lanes into its own partial row, so one image with few
// blocks still splits: over pixels where there are many (112x112), over channels where there are few
// (a batch-1 7x7x1152 map would otherwise run on one thread).
void global_average(const float* x, const PixelBlocks& v, int64_t channels, float* out) {
  const int threads = omp_get_max_threads();
  const int64_t rows = v.n * v.blocks;
  const bool parallel = threads > 1 && rows * v.pixels * v.lanes >= kSmallElementwise;
  // Enough pieces that every thread has work: pixel ranges of at least 64 pixels, then lane ranges
  // of at least 64 lanes (multiples of 16, whole cache lines).
  const int64_t want = 2 * threads;
  const int64_t ranges = parallel ? std::clamp<int64_t>((want + rows - 1) / rows, 1, std::max<int64_t>(v.pixels / 64, 1)) : 1;
  const int64_t parts = parallel ? std::clamp<int64_t>((want + rows * ranges - 1) / (rows * ranges), 1, std::max<int64_t>(v.lanes / 64, 1)) : 1;
  const int64_t part_lanes = ((v.lanes + parts - 1) / parts + 15) & ~int64_t{15};
  std::vector<float> partial(static_cast<size_t>(rows * ranges * v.lanes), 0.f);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < rows * ranges * parts; ++item) {
    const int64_t piece = item / parts, part = item % parts;
    const int64_t row = piece / ranges, r = piece % ranges;
    const int64_t p0 = v.pixels * r / ranges, p1 = v.pixels * (r + 1) / ranges;
    const int64_t l0 = std::min(part * part_lanes, v.lanes), l1 = std::min(l0 + part_lanes, v.lanes);
    const float* base = x + (row / v.blocks) * v.n_stride + (row % v.blocks) * v.block_stride;
    float* acc = partial.data() + piece * v.lanes;
    if (v.lanes == 1) {
      acc[0] = vec_sum(base + p0, p1 - p0);
    } else if (l1 > l0) {
      vec_accumulate_rows(base + p0 * v.lanes + l0, p1 - p0, l1 - l0, v.lanes, acc + l0);
    }
  }
  const float inv = 1.f / static_cast<float>(v.pixels);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / v.blocks, c0 = (row % v.blocks) * v.lanes;
    for (int64_t j = 0; j < v.lanes && c0 + j < channels; ++j) {
      float sum = 0.f;
      for (int64_t r = 0; r < ranges; ++r) sum += partial[(row * ranges + r) * v.lanes + j];
      out[n * channels + c0 + j] = sum * inv;
    }
  }
}

}  // namespace ferry::backends::cpu
