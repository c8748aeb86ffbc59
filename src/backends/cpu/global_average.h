// The mean over all pixels of an NC... float32 tensor in the layouts oneDNN's convolutions write (nchw,
// nhwc, nC..16c-style blocked), without making it plain first: GlobalAveragePool's kernel (pool.cc) and
// ReduceMean over the spatial axes (reduce.cc, mnasnet's `x.mean([2, 3])`).
#pragma once
#include <cstdint>

#include <dnnl.hpp>

namespace ferry::backends::cpu {

// A float32 tensor's bytes seen as [N][blocks][pixels][lanes]: nchw has C blocks of 1 lane, nhwc one
// block of C lanes, nChw16c C/16 blocks (rounded up: padded channels) of 16 lanes.
struct PixelBlocks {
  int64_t n = 0, blocks = 0, pixels = 0, lanes = 0;
  int64_t n_stride = 0, block_stride = 0;  // in floats; pixels are `lanes` floats apart
};

// The view for `m`, or false for any other layout (strided, other blockings, offsets, other types).
bool pixel_blocks(const dnnl::memory::desc& m, PixelBlocks* v);

// Mean over the pixels of `x` (viewed as `v`) into plain [N, C] floats `out` (`channels`: C, without the
// padding of a blocked layout).
void global_average(const float* x, const PixelBlocks& v, int64_t channels, float* out);

}  // namespace ferry::backends::cpu
