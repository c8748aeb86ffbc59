// fp32 GEMM with a constant B on Intel MKL's packed sgemm (cblas_sgemm_pack / cblas_sgemm_compute),
// for the MatMul kernel's Linear layers: at the transformer shapes (K and N >= 512) it measured 8-30%
// faster than oneDNN 2.6's matmul on an Intel Xeon (bench/README.md), and those GEMMs are ~90% of a
// ViT's or a BERT's time. On an AMD EPYC (Zen 5) the same MKL ran them 2.5x slower than oneDNN (bert_like
// 170 against 71 ms, vit_b_16 252 against 102 ms: MKL takes generic code paths on non-Intel CPUs), so
// the path is used on Intel CPUs only. Built only when CMake found MKL (FERRY_HAVE_MKL); FERRY_CPU_MKL=0
// / =1 turn it off / on regardless of the vendor (the kernels then use oneDNN as before).
//
// The pack is MKL's own opaque format, made once; it does not depend on M (checked: one pack serves
// every M bit-identically; only its speed depends on the M given at packing), so every batch size shares it. The buffer is mmap'd: MKL asks for about
// twice the plain bytes but writes only what it uses, and untouched pages are never resident.
// A packed B can be adopted as the weight's initializer (MklPackedLayout): to_plain rebuilds the
// original values exactly by multiplying identity rows by the pack (1 * b + 0 * others, exact for
// finite b, except that -0.0 comes back as +0.0; packing is refused for weights holding inf or NaN, where 0 * inf would not be).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace ferry::backends::cpu {


class MklPackedB {
 public:
  ~MklPackedB();
  MklPackedB(const MklPackedB&) = delete;
  MklPackedB& operator=(const MklPackedB&) = delete;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // C[M, N] = A[M, K] * B (A and C dense row-major), on the current OpenMP thread count.
  void multiply(const float* a, int64_t m, float* c) const;
  // The original B in its stored layout ([K, N], or [N, K] when packed transposed).
  Result<Tensor> unpack() const;
  void* data() const { return data_; }

  // Packs `b` (dense float32, [K, N], or [N, K] with trans_b). Errors: no MKL, non-finite values,
  // dims beyond MKL's 32-bit indices, or the mapping failing.
  static Result<std::shared_ptr<MklPackedB>> pack(const Tensor& b, bool trans_b);

 private:
  MklPackedB() = default;
  int64_t k_ = 0, n_ = 0;
  bool trans_ = false;
  std::vector<int64_t> stored_dims_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The tensor to hand back from Kernel::adopt_constant: `original`'s dtype and dims over the pack
// (kept alive), with a layout whose to_plain is MklPackedB::unpack.
Tensor adopt_mkl_packed(const Tensor& original, std::shared_ptr<MklPackedB> packed);
// The pack behind a tensor made by adopt_mkl_packed, null for any other tensor.
std::shared_ptr<MklPackedB> mkl_pack_of(const Tensor& t);

}  // namespace ferry::backends::cpu
