#include "backends/cpu/vec_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "backends/cpu/isa_probe.h"
#include "backends/cpu/vec_rnn.h"

namespace ferry::backends::cpu {

namespace {

constexpr int64_t kNR = VecPackedB::kPanel;  // columns of a register tile (2 AVX2 vectors)
constexpr int kMR = 6;                       // rows of a register tile: 12 accumulators of 16 ymm
// Block sizes, measured in one process alternating candidates (this VM's speed drifts too much for
// separate runs): 384 / 24 / 144 beat 256 / 12 / 144 by 2-12% on each of eight transformer and
// ConvNeXt shapes (128-3136 rows), and 128-512 deep slices, 6-48 panels and 72-288 rows otherwise.
constexpr int64_t kKC = 384;        // depth of a K slice: 24 KB of a B panel (L1), 9 KB of an A tile
constexpr int64_t kNCPanels = 24;   // panels per block: 384 columns
constexpr int64_t kMC = 144;        // rows per block (24 tiles): 216 KB of A per K slice

// One register tile: C[MR x ncols] (+)= A[MR x kc] * Bpanel[kc x 16]. a: the tile's rows of the
// slice packed k-major (kMR floats a k, rows past MR unused); b: the panel's first row of the slice
// (16 floats a row, aligned); accumulate: add to C (a later K slice) instead of overwriting it.
template <int MR>
__attribute__((target("avx2,fma"))) void tile(const float* __restrict a, const float* __restrict b, int64_t kc,
                                              float* __restrict c, int64_t ldc, bool accumulate, int64_t ncols) {
  __m256 lo[MR], hi[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b + k * kNR), b1 = _mm256_load_ps(b + k * kNR + 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + k * kMR + r);
      lo[r] = _mm256_fmadd_ps(av, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(av, b1, hi[r]);
    }
  }
  if (ncols == kNR) {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      float* cr = c + r * ldc;
      if (accumulate) {
        lo[r] = _mm256_add_ps(lo[r], _mm256_loadu_ps(cr));
        hi[r] = _mm256_add_ps(hi[r], _mm256_loadu_ps(cr + 8));
      }
      _mm256_storeu_ps(cr, lo[r]);
      _mm256_storeu_ps(cr + 8, hi[r]);
    }
    return;
  }
  alignas(32) float row[kNR];  // the last panel: only its real columns are written
  // (Every loop over the tile's rows is unrolled: an indexed access anywhere puts the accumulators
  // in memory, and the k loop then stored all twelve each iteration: 48 instead of 190 GFLOP/s.)
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm256_store_ps(row, lo[r]);
    _mm256_store_ps(row + 8, hi[r]);
    float* cr = c + r * ldc;
    for (int64_t j = 0; j < ncols; ++j) cr[j] = accumulate ? cr[j] + row[j] : row[j];
  }
}

using TileFn = void (*)(const float*, const float*, int64_t, float*, int64_t, bool, int64_t);
constexpr TileFn kTiles[kMR + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

// Rows [i0, i1) x panels [p0, p1) of C, the whole depth, slice by slice. Each slice of the block's
// rows of A is first copied k-major per tile into `apack` (kMC x kKC floats): the tiles then read
// it sequentially, where reading A's rows in place put the 6 rows of a tile into one L1 set whenever
// a row is a multiple of 4 KiB (K = 3072: 20% slower than ONNX Runtime on 1576x3072x768).
void block(const float* a, int64_t K, int64_t N, const float* packed, float* c, int64_t i0, int64_t i1, int64_t p0,
           int64_t p1, float* apack) {
  for (int64_t k0 = 0; k0 < K; k0 += kKC) {
    const int64_t kc = std::min(kKC, K - k0);
    for (int64_t i = i0; i < i1; i += kMR) {
      const int64_t mr = std::min<int64_t>(kMR, i1 - i);
      float* dst = apack + (i - i0) * kc;
      for (int64_t r = 0; r < mr; ++r) {
        const float* src = a + (i + r) * K + k0;
        for (int64_t k = 0; k < kc; ++k) dst[k * kMR + r] = src[k];
      }
    }
    // Panels outer, tiles inner: a panel's slice (16 KB) stays in L1 while the tiles' A (6 KB each)
    // come from L2 (the other order read 16 KB of B from L2 per tile).
    for (int64_t p = p0; p < p1; ++p) {
      const float* bp = packed + (p * K + k0) * kNR;
      const int64_t ncols = std::min(kNR, N - p * kNR);
      for (int64_t i = i0; i < i1; i += kMR)
        kTiles[std::min<int64_t>(kMR, i1 - i)](apack + (i - i0) * kc, bp, kc, c + i * N + p * kNR, N, k0 > 0, ncols);
    }
  }
}

class VecPackedLayout : public TensorLayout {
 public:
  explicit VecPackedLayout(std::shared_ptr<VecPackedB> packed) : packed_(std::move(packed)) {}
  std::string describe() const override { return "ferry packed GEMM B (16-column panels)"; }
  Result<Tensor> to_plain(const Tensor&) const override { return packed_->unpack(); }
  const std::shared_ptr<VecPackedB>& packed() const { return packed_; }

 private:
  std::shared_ptr<VecPackedB> packed_;
};

}  // namespace

Result<std::shared_ptr<VecPackedB>> VecPackedB::pack(const Tensor& b, bool trans_b) {
  if (!isa_has(dnnl::cpu_isa::avx2) || !__builtin_cpu_supports("fma"))
    return Status::unsupported("packed GEMM: this CPU has no AVX2+FMA");
  if (b.dtype() != DType::kFloat32 || !b.is_plain() || b.rank() != 2 || b.numel() == 0)
    return Status::invalid("packed GEMM: B must be a plain non-empty 2-D float32 tensor, got " + b.describe());
  std::shared_ptr<VecPackedB> p(new VecPackedB());
  const int64_t rows = b.dim(0), cols = b.dim(1);
  p->trans_ = trans_b;
  p->k_ = trans_b ? cols : rows;
  p->n_ = trans_b ? rows : cols;
  p->stored_dims_ = b.dims();
  const int64_t panels = (p->n_ + kNR - 1) / kNR, K = p->k_, N = p->n_;
  const size_t bytes = static_cast<size_t>(panels * K * kNR) * sizeof(float);
  float* mem = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (!mem) return Status::error(ErrorCode::kOutOfRange, "packed GEMM: out of memory for B " + b.describe());
  p->data_ = std::shared_ptr<float>(mem, [](float* f) { std::free(f); });
  const float* src = b.data<float>();
  for (int64_t pn = 0; pn < panels; ++pn)
    for (int64_t k = 0; k < K; ++k) {
      float* dst = mem + (pn * K + k) * kNR;
      for (int64_t j = 0; j < kNR; ++j) {
        const int64_t col = pn * kNR + j;
        dst[j] = col >= N ? 0.f : (trans_b ? src[col * K + k] : src[k * N + col]);
      }
    }
  return p;
}

// Few rows (a decoder's step, a batch-1 classifier head): the product reads B once, so it is bound by
// memory bandwidth rather than FMAs, and the blocked path's A packing and column blocks only add passes.
// Each thread streams a contiguous run of panels through vec_step_gemm's register tile (every row of A
// against two panels on AVX-512), in K slices that keep a panel pair in L2 for the row tiles after the
// first; the last, partial panel goes through a 16-column buffer.
void VecPackedB::multiply_few_rows(const float* a, int64_t m, float* c) const {
  constexpr int64_t kSliceK = 1024;  // a panel pair's slice: 128 KB
  const int64_t panels = (n_ + kNR - 1) / kNR, full = n_ / kNR, K = k_, N = n_;
  const float* packed = data_.get();
  const int threads = omp_get_max_threads();
  const bool parallel = threads > 1 && panels > 1 && m * n_ * k_ >= (int64_t{1} << 18);
#pragma omp parallel if (parallel)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t p0 = panels * t / nt, p1 = panels * (t + 1) / nt, p1_full = std::min(p1, full);
    alignas(64) float last[kFewRows * kNR];
    for (int64_t k0 = 0; k0 < K; k0 += kSliceK) {
      const int64_t kc = std::min(kSliceK, K - k0);
      if (p1_full > p0)
        vec_step_gemm(a + k0, K, m, kc, packed + (p0 * K + k0) * kNR, K, p1_full - p0, c + p0 * kNR, N, k0 > 0);
      if (p1 > p1_full)  // the partial last panel
        vec_step_gemm(a + k0, K, m, kc, packed + (full * K + k0) * kNR, K, 1, last, kNR, k0 > 0);
    }
    if (p1 > p1_full) {
      const int64_t cols = N - full * kNR;
      for (int64_t r = 0; r < m; ++r) std::memcpy(c + r * N + full * kNR, last + r * kNR, cols * sizeof(float));
    }
  }
}

void VecPackedB::multiply(const float* a, int64_t m, float* c) const {
  if (m <= 0) return;
  if (m <= kFewRows) return multiply_few_rows(a, m, c);
  const int64_t panels = (n_ + kNR - 1) / kNR;
  const int threads = omp_get_max_threads();
  const int64_t row_blocks = (m + kMC - 1) / kMC;
  // Narrower column blocks where the wide ones leave threads without work (128 rows x 768 columns
  // would be one block).
  int64_t nc = kNCPanels;
  while (nc > 4 && row_blocks * ((panels + nc - 1) / nc) < 2 * threads) nc /= 2;
  const int64_t col_blocks = (panels + nc - 1) / nc;
  const int64_t blocks = col_blocks * row_blocks;
  // Blocks in column-major order: with a static schedule each thread takes a contiguous run of
  // column blocks, so the threads read disjoint parts of B.
  const bool parallel = threads > 1 && blocks > 1 && m * n_ * k_ >= (int64_t{1} << 18);
#pragma omp parallel if (parallel)
  {
    // Each thread's A slices (144 KB): kept per thread (a fresh allocation per call of this size is
    // an mmap with its page faults), not on worker stacks.
    thread_local std::vector<float> apack;
    if (apack.size() < static_cast<size_t>(kMC * kKC)) apack.resize(static_cast<size_t>(kMC * kKC));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < blocks; ++t) {
      const int64_t cb = t / row_blocks, rb = t % row_blocks;
      block(a, k_, n_, data_.get(), c, rb * kMC, std::min(m, (rb + 1) * kMC), cb * nc, std::min(panels, (cb + 1) * nc),
            apack.data());
    }
  }
}

Result<Tensor> VecPackedB::unpack() const {
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(DType::kFloat32, stored_dims_));
  float* dst = out.data<float>();
  const float* src = data_.get();
  for (int64_t k = 0; k < k_; ++k)
    for (int64_t col = 0; col < n_; ++col) {
      const float v = src[((col / kNR) * k_ + k) * kNR + col % kNR];
      dst[trans_ ? col * k_ + k : k * n_ + col] = v;
    }
  return out;
}

Tensor adopt_vec_packed(const Tensor& original, std::shared_ptr<VecPackedB> packed) {
  auto layout = std::make_shared<VecPackedLayout>(packed);
  float* data = const_cast<float*>(packed->data());
  Tensor t = Tensor::wrap(original.dtype(), original.dims(), data, std::shared_ptr<void>(packed, data));
  t.set_layout(std::move(layout));
  return t;
}

std::shared_ptr<VecPackedB> vec_pack_of(const Tensor& t) {
  const auto* l = dynamic_cast<const VecPackedLayout*>(t.layout());
  return l ? l->packed() : nullptr;
}

}  // namespace ferry::backends::cpu
