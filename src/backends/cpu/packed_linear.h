// Y[M, N] = X[M, K] . W^T for a weight W [N, K] that stays the same from run to run (a recurrent op's
// input weights), on oneDNN's matmul with W reordered once into the layout the primitive chose.
//
// Why not dnnl_sgemm, which the recurrent ops called before: it packs W again on every call, and ran
// lstm_2layer's 100 x 2048 x 512 input projection at batch 1 at 113 GFLOP/s of the 236 peak of an AMD
// Zen 4 (2 threads); the matmul with W packed once runs such shapes near the peak (bench/README.md).
#pragma once
#include <cstdint>

#include "backends/cpu/cpu_backend.h"
#include "core/status.h"
#include "core/tensor.h"

namespace ferry::backends::cpu {

class PackedLinear {
 public:
  // y = x . w^T. The primitive is made for the first M (and again when M, N or K change), w packed
  // when it is not the pointer packed last time, or every call with w_constant false.
  Status run(const float* x, int64_t M, const float* w, int64_t N, int64_t K, bool w_constant, float* y);

 private:
  Status prepare(int64_t M, int64_t N, int64_t K);
  int64_t m_ = -1, n_ = -1, k_ = -1;
  bool usable_ = false;         // oneDNN has a non-reference matmul for the shape
  const float* packed_from_ = nullptr;
  dnnl::matmul matmul_;
  dnnl::memory::desc src_md_, wei_plain_md_, wei_md_, dst_md_;
  Tensor packed_;  // W in wei_md_
};

}  // namespace ferry::backends::cpu
