#include "backends/cpu/mkl_gemm.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#ifdef FERRY_HAVE_MKL
#include <mkl_cblas.h>
#endif

namespace ferry::backends::cpu {

MklPackedB::~MklPackedB() {
  if (data_) munmap(data_, bytes_);
}

#ifdef FERRY_HAVE_MKL

namespace {

constexpr int64_t kMaxMklDim = std::numeric_limits<int>::max();

class MklPackedLayout : public TensorLayout {
 public:
  explicit MklPackedLayout(std::shared_ptr<MklPackedB> packed) : packed_(std::move(packed)) {}
  std::string describe() const override { return "MKL packed sgemm B"; }
  Result<Tensor> to_plain(const Tensor&) const override { return packed_->unpack(); }
  const std::shared_ptr<MklPackedB>& packed() const { return packed_; }

 private:
  std::shared_ptr<MklPackedB> packed_;
};

}  // namespace

Result<std::shared_ptr<MklPackedB>> MklPackedB::pack(const Tensor& b, bool trans_b) {
  if (b.dtype() != DType::kFloat32 || !b.is_plain() || b.rank() != 2)
    return Status::invalid("MKL pack: B must be a plain 2-D float32 tensor, got " + b.describe());
  const int64_t rows = b.dims()[0], cols = b.dims()[1];
  if (rows <= 0 || cols <= 0 || rows > kMaxMklDim || cols > kMaxMklDim)
    return Status::invalid("MKL pack: B dims out of range: " + b.describe());
  const float* src = b.data<float>();
  for (int64_t i = 0; i < b.numel(); ++i)
    if (!std::isfinite(src[i])) return Status::invalid("MKL pack: B holds inf or NaN");
  std::shared_ptr<MklPackedB> p(new MklPackedB());
  p->trans_ = trans_b;
  p->k_ = trans_b ? cols : rows;
  p->n_ = trans_b ? rows : cols;
  p->stored_dims_ = b.dims();
  const int k = static_cast<int>(p->k_), n = static_cast<int>(p->n_);
  // The pack's bytes do not depend on M, but its blocking does. Measured here (2 threads, compute at
  // M = 128 / 197 / 1576): K 768 x N 3072 packed for M = 1 ran at 89-94 GFLOP/s for the small M, for
  // M = 128..1576 at 195-215; K 3072 x N 768 packed for M = 1024 ran at 104-118 for the small M, for
  // M = 256 at 199-205 everywhere. 256 is fast for both.
  constexpr int kPackM = 256;
  p->bytes_ = cblas_sgemm_pack_get_size(CblasBMatrix, kPackM, n, k);
  void* mem = mmap(nullptr, p->bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return Status::error(ErrorCode::kOutOfRange, "MKL pack: out of memory");
  p->data_ = mem;
  cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, trans_b ? CblasTrans : CblasNoTrans, kPackM, n, k, 1.f, src,
                   static_cast<int>(cols), static_cast<float*>(p->data_));
  return p;
}

void MklPackedB::multiply(const float* a, int64_t m, float* c) const {
  const int k = static_cast<int>(k_), n = static_cast<int>(n_);
  // M beyond int: in row chunks (each is an independent GEMM).
  for (int64_t r0 = 0; r0 < m; r0 += kMaxMklDim) {
    const int rows = static_cast<int>(std::min(m - r0, kMaxMklDim));
    cblas_sgemm_compute(CblasRowMajor, CblasNoTrans, CblasPacked, rows, n, k, a + r0 * k_, k,
                        static_cast<const float*>(data_), n, 0.f, c + r0 * n_, n);
  }
}

Result<Tensor> MklPackedB::unpack() const {
  // B (logical [K, N]) = I_K * B, computed a block of identity rows at a time.
  Tensor logical(DType::kFloat32, {k_, n_});
  const int64_t block = std::min<int64_t>(k_, 256);
  std::vector<float> eye(static_cast<size_t>(block * k_));
  for (int64_t r0 = 0; r0 < k_; r0 += block) {
    const int64_t rows = std::min(block, k_ - r0);
    std::fill(eye.begin(), eye.end(), 0.f);
    for (int64_t r = 0; r < rows; ++r) eye[static_cast<size_t>(r * k_ + r0 + r)] = 1.f;
    multiply(eye.data(), rows, logical.data<float>() + r0 * n_);
  }
  if (!trans_) return logical;
  Tensor stored(DType::kFloat32, stored_dims_);  // [N, K]
  const float* s = logical.data<float>();
  float* d = stored.data<float>();
  for (int64_t kk = 0; kk < k_; ++kk)
    for (int64_t nn = 0; nn < n_; ++nn) d[nn * k_ + kk] = s[kk * n_ + nn];
  return stored;
}

Tensor adopt_mkl_packed(const Tensor& original, std::shared_ptr<MklPackedB> packed) {
  auto layout = std::make_shared<MklPackedLayout>(packed);
  Tensor t = Tensor::wrap(original.dtype(), original.dims(), packed->data(), std::shared_ptr<void>(packed, packed->data()));
  t.set_layout(std::move(layout));
  return t;
}

std::shared_ptr<MklPackedB> mkl_pack_of(const Tensor& t) {
  const auto* l = dynamic_cast<const MklPackedLayout*>(t.layout());
  return l ? l->packed() : nullptr;
}

#else  // !FERRY_HAVE_MKL

Result<std::shared_ptr<MklPackedB>> MklPackedB::pack(const Tensor&, bool) {
  return Status::unsupported("ferry was built without MKL");
}
void MklPackedB::multiply(const float*, int64_t, float*) const {}
Result<Tensor> MklPackedB::unpack() const { return Status::unsupported("ferry was built without MKL"); }
Tensor adopt_mkl_packed(const Tensor&, std::shared_ptr<MklPackedB>) { return Tensor(); }
std::shared_ptr<MklPackedB> mkl_pack_of(const Tensor&) { return nullptr; }

#endif

}  // namespace ferry::backends::cpu
