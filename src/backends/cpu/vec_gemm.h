// fp32 GEMM with a constant B packed once (the Linear layers of transformers and MLP heads), on the
// cpu backend's own AVX2 micro-kernel, for CPUs without AVX-512.
//
// Why: on AVX2, oneDNN 2.6's matmul runs its jit gemm, which repacks B on every call: on a Zen 3 (2
// threads, fp32 FMA peak 188 GFLOP/s) it ran bert_like's 128x768x3072 Linear at 72 GFLOP/s where ONNX
// Runtime's MLAS, which packs constant weights once, ran it at 124. With AVX-512 oneDNN's brgemm matmul
// is used as before (this kernel is not chosen there unless FERRY_CPU_VEC_GEMM=1).
//
// The pack: B as panels of 16 columns, each panel K rows of 16 floats (64 bytes, aligned), the last
// panel's missing columns zero. C is computed in blocks (144 rows x 384 columns, narrower where
// that leaves a thread idle) spread over the OpenMP threads, each block in 384-deep slices of K: the
// slice of the block's A rows is copied k-major per 6-row tile (sequential reads, no cache-set
// conflicts between rows), then each panel's slice (24 KB, in L1) meets every tile (from L2) in a
// 6x16 register tile: 12 accumulators, 2 B loads and 6 A broadcasts per k. unpack() rebuilds B exactly (a permutation of its values), so the pack can
// replace the original weight (adopt_vec_packed) and the model holds its weights once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace ferry::backends::cpu {


class VecPackedB {
 public:
  static constexpr int64_t kPanel = 16;  // columns per panel
  static constexpr int64_t kFewRows = 15;  // up to this many rows of A: multiply_few_rows
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // C[M, N] = A[M, K] * B (A and C dense row-major), on the current OpenMP thread count.
  void multiply(const float* a, int64_t m, float* c) const;
  // The original B in its stored layout ([K, N], or [N, K] when packed transposed), bit for bit.
  Result<Tensor> unpack() const;
  const float* data() const { return data_.get(); }

  // Packs `b` (plain float32, [K, N], or [N, K] with trans_b). Errors: not 2-D float32, empty, or
  // no AVX2/FMA on this CPU.
  static Result<std::shared_ptr<VecPackedB>> pack(const Tensor& b, bool trans_b);

 private:
  VecPackedB() = default;
  void multiply_few_rows(const float* a, int64_t m, float* c) const;
  int64_t k_ = 0, n_ = 0;
  bool trans_ = false;
  std::vector<int64_t> stored_dims_;
  std::shared_ptr<float> data_;  // ceil(N / 16) panels of K x 16 floats, 64-byte aligned
};

// The tensor to hand back from Kernel::adopt_constant: `original`'s dtype and dims over the pack
// (kept alive), with a layout whose to_plain is VecPackedB::unpack.
Tensor adopt_vec_packed(const Tensor& original, std::shared_ptr<VecPackedB> packed);
// The pack behind a tensor made by adopt_vec_packed, null for any other tensor.
std::shared_ptr<VecPackedB> vec_pack_of(const Tensor& t);

}  // namespace ferry::backends::cpu
