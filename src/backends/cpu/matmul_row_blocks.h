// A bf16 Linear layer whose K is at least twice its N (a transformer MLP's down-projection, 3072 -> 768)
// as one single-threaded oneDNN matmul per thread, each over its own block of rows and all on the same
// packed weights. oneDNN 2.6's AMX matmul splits such shapes over its threads more slowly
// (bench: 197 x 3072 x 768 1.03-1.10 -> 0.85-0.92 ms, 1576 rows 4.81 -> 4.48 ms, 128 rows 0.67-0.72 ->
// 0.60-0.67 ms; 2 threads, Intel Xeon with AMX, weights evicted before each run). Where N >= K (qkv, the
// MLP's up-projection) or K = N, or with fewer than 64 rows a thread, its own split measured faster
// (197 x 768 x 3072: 0.89-0.95 -> 1.03 ms in blocks), and fp32 shapes lose in blocks too.
#pragma once
#include <dnnl.hpp>

#include <functional>
#include <memory>
#include <unordered_map>

#include "backends/cpu/thread_streams.h"
#include "core/status.h"

namespace ferry::backends::cpu {

class MatMulRowBlocks {
 public:
  // The per-thread primitives for A [rows, K] (dense bf16) times the packed weights `wei` into a dense
  // [rows, N] destination of `dst_type`, with the attributes `attr_for(z)` gives (the whole matmul's
  // scale and post-ops, the residual Z's descriptor for a block being `z`; empty z without one). Null
  // where the shape is not one that gains (the class comment), the CPU has no AMX kernel for it, or
  // oneDNN would want other weights.
  static std::unique_ptr<MatMulRowBlocks> make(int64_t rows, int64_t K, int64_t N, const dnnl::memory::desc& wei,
                                               dnnl::memory::data_type dst_type, bool has_z,
                                               const std::function<dnnl::primitive_attr(const dnnl::memory::desc&)>& attr_for);

  // Runs the blocks with the whole matmul's `args` (SRC, WEIGHTS, DST, and the binary post-ops' SRC_1;
  // the residual Z at post-op `z_po`, -1 without one), each thread on its rows. False, running nothing,
  // when the OpenMP thread count is no longer the one planned for (the caller runs its own primitive).
  Result<bool> run(const std::unordered_map<int, dnnl::memory>& args, int z_po);

 private:
  struct Block {
    int64_t rows = 0;
    dnnl::memory::desc src, dst, z;
    dnnl::matmul prim;
  };
  MatMulRowBlocks() = default;

  int threads_ = 0;
  int64_t K_ = 0, N_ = 0;
  Block block_, last_;  // every thread's block but the last one's, and the last
  size_t scratchpad_bytes_ = 0;
  ThreadStreams streams_;
};

}  // namespace ferry::backends::cpu
