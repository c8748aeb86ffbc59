// Highway compiles the kernel part of this file once per target (foreach_target.h re-includes it);
// HWY_ONCE marks the part compiled once: the dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_rnn.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <algorithm>
#include <type_traits>

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "backends/cpu/vec_rnn.h"
#include "backends/cpu/vec_partial-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Hidden units in vectors; a partial last vector goes through padded buffers (vec_partial-inl.h), so
// every unit takes the same instructions.
template <class D>
struct Lanes {
  D d;
  size_t n, i = 0, count = 0;
  hn::Vec<D> load(const float* p) { return LoadPartial(d, p + i, count); }
  void store(hn::Vec<D> v, float* p) { StorePartial(d, v, p + i, count); }
};

template <class D, class V>
HWY_INLINE V clip_to(D d, V x, float clip) {
  return clip > 0 ? hn::Min(hn::Max(x, hn::Set(d, -clip)), hn::Set(d, clip)) : x;
}
template <class D, class V>
HWY_INLINE V sigmoid(D d, V x) {
  return hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), hn::Exp(d, hn::Neg(x))));
}

void LstmCellF32(const float* g, const float* p, int64_t hidden, float clip, bool input_forget, float* h, float* c) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    const auto c_prev = l.load(c);
    auto gi = l.load(g), go = l.load(g + H), gf = l.load(g + 2 * H);
    const auto gc = l.load(g + 3 * H);
    if (p) {
      gi = hn::MulAdd(l.load(p), c_prev, gi);
      gf = hn::MulAdd(l.load(p + 2 * H), c_prev, gf);
    }
    const auto i = sigmoid(d, clip_to(d, gi, clip));
    const auto f = input_forget ? hn::Sub(hn::Set(d, 1.0f), i) : sigmoid(d, clip_to(d, gf, clip));
    const auto cc = hn::Tanh(d, clip_to(d, gc, clip));
    const auto cn = hn::MulAdd(f, c_prev, hn::Mul(i, cc));
    if (p) go = hn::MulAdd(l.load(p + H), cn, go);
    const auto o = sigmoid(d, clip_to(d, go, clip));
    l.store(cn, c);
    l.store(hn::Mul(o, hn::Tanh(d, cn)), h);
  }
}

void GruCellF32(const float* g, const float* hr, int64_t hidden, float clip, float* h) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    const auto z = sigmoid(d, clip_to(d, l.load(g), clip));
    const auto hh = hn::Tanh(d, clip_to(d, hn::Add(l.load(g + 2 * H), l.load(hr)), clip));
    // (1 - z) * hh + z * h = hh + z * (h - hh)
    const auto hp = l.load(h);
    l.store(hn::MulAdd(z, hn::Sub(hp, hh), hh), h);
  }
}

void GruResetF32(const float* g_r, const float* x, const float* b, int64_t hidden, float clip, float* out) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    const auto r = sigmoid(d, clip_to(d, l.load(g_r), clip));
    const auto v = b ? hn::Add(l.load(x), l.load(b)) : l.load(x);
    l.store(hn::Mul(r, v), out);
  }
}

void RnnCellF32(const float* g, int64_t hidden, float clip, float* h) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    l.store(hn::Tanh(d, clip_to(d, l.load(g), clip)), h);
  }
}

// StepGemm: C[rows, 16 * panels] (+)= A[rows, K] . P, P being `panels` panels of K x 16 floats (64-byte
// aligned). A register tile is kRows rows x kPanels panels: per k, the tile's panel rows are loaded
// once and each A element is broadcast once, so the accumulators stay in registers (AVX-512: 8 rows
// x 2 panels, 16 of 32 zmm; AVX2: 6 x 1, 12 of 16 ymm).
template <class D>
constexpr size_t kTileRows = hn::MaxLanes(D()) >= 16 ? 8 : hn::MaxLanes(D()) == 8 ? 6 : 2;
template <class D>
constexpr size_t kTilePanels = hn::MaxLanes(D()) >= 16 ? 2 : 1;

template <size_t kRows, size_t kPanels, class D>
void StepTile(D d, const float* HWY_RESTRICT a, size_t lda, const float* HWY_RESTRICT p, size_t K, size_t ldp,
              float* HWY_RESTRICT c, size_t ldc, bool accumulate) {
  constexpr size_t L = hn::MaxLanes(D());
  static_assert(L <= 16 && 16 % L == 0, "a panel row is whole vectors");
  constexpr size_t V = 16 / L * kPanels;  // vectors per tile row
  hn::Vec<D> sum[kRows][V];
#pragma GCC unroll 16
  for (size_t r = 0; r < kRows; ++r)
#pragma GCC unroll 16
    for (size_t v = 0; v < V; ++v) sum[r][v] = hn::Zero(d);
  for (size_t k = 0; k < K; ++k) {
    hn::Vec<D> b[V];
#pragma GCC unroll 16
    for (size_t v = 0; v < V; ++v) b[v] = hn::Load(d, p + (v * L / 16) * ldp * 16 + k * 16 + v * L % 16);
#pragma GCC unroll 16
    for (size_t r = 0; r < kRows; ++r) {
      const auto ar = hn::Set(d, a[r * lda + k]);
#pragma GCC unroll 16
      for (size_t v = 0; v < V; ++v) sum[r][v] = hn::MulAdd(ar, b[v], sum[r][v]);
    }
  }
#pragma GCC unroll 16
  for (size_t r = 0; r < kRows; ++r)
#pragma GCC unroll 16
    for (size_t v = 0; v < V; ++v) {
      float* cr = c + r * ldc + v * L;
      hn::StoreU(accumulate ? hn::Add(sum[r][v], hn::LoadU(d, cr)) : sum[r][v], d, cr);
    }
}

// A tile of `rows` (1..kRows) rows: the template for that count.
template <size_t kRows, size_t kPanels, class D>
void StepTileRows(D d, size_t rows, const float* a, size_t lda, const float* p, size_t K, size_t ldp, float* c,
                  size_t ldc, bool accumulate) {
  if constexpr (kRows > 1) {
    if (rows < kRows) return StepTileRows<kRows - 1, kPanels>(d, rows, a, lda, p, K, ldp, c, ldc, accumulate);
  }
  StepTile<kRows, kPanels>(d, a, lda, p, K, ldp, c, ldc, accumulate);
}

void StepGemmF32(const float* a, int64_t lda, int64_t rows, int64_t K, const float* panels, int64_t panel_rows,
                 int64_t npanels, float* c, int64_t ldc, bool accumulate) {
  const hn::ScalableTag<float> d;
  constexpr size_t R = kTileRows<decltype(d)>, P = kTilePanels<decltype(d)>;
  const size_t k = static_cast<size_t>(K), la = static_cast<size_t>(lda), lc = static_cast<size_t>(ldc),
               lp = static_cast<size_t>(panel_rows);
  // Panels outer, row tiles inner: a panel pair (2 x K x 16 floats) is read from memory once per
  // call and meets every row tile from the caches.
  auto tile_rows = [&](int64_t p0, auto panels_tag) {
    constexpr size_t kP = decltype(panels_tag)::value;
    for (int64_t r0 = 0; r0 < rows; r0 += R) {
      const size_t rr = std::min<size_t>(R, static_cast<size_t>(rows - r0));
      StepTileRows<R, kP>(d, rr, a + r0 * lda, la, panels + p0 * panel_rows * 16, k, lp, c + r0 * ldc + p0 * 16, lc,
                          accumulate);
    }
  };
  int64_t p0 = 0;
  for (; p0 + static_cast<int64_t>(P) <= npanels; p0 += P) tile_rows(p0, std::integral_constant<size_t, P>());
  for (; p0 < npanels; ++p0) tile_rows(p0, std::integral_constant<size_t, 1>());
}

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(LstmCellF32);
HWY_EXPORT(GruCellF32);
HWY_EXPORT(RnnCellF32);
HWY_EXPORT(GruResetF32);
HWY_EXPORT(StepGemmF32);

void vec_lstm_cell(const float* g, const float* p, int64_t hidden, float clip, bool input_forget, float* h, float* c) {
  HWY_DYNAMIC_DISPATCH(LstmCellF32)(g, p, hidden, clip, input_forget, h, c);
}
void vec_gru_cell(const float* g, const float* hr, int64_t hidden, float clip, float* h) {
  HWY_DYNAMIC_DISPATCH(GruCellF32)(g, hr, hidden, clip, h);
}
void vec_gru_reset(const float* g_r, const float* x, const float* b, int64_t hidden, float clip, float* out) {
  HWY_DYNAMIC_DISPATCH(GruResetF32)(g_r, x, b, hidden, clip, out);
}
void vec_rnn_cell(const float* g, int64_t hidden, float clip, float* h) { HWY_DYNAMIC_DISPATCH(RnnCellF32)(g, hidden, clip, h); }
void vec_step_gemm(const float* a, int64_t lda, int64_t rows, int64_t k, const float* panels, int64_t panel_rows,
                   int64_t npanels, float* c, int64_t ldc, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(StepGemmF32)(a, lda, rows, k, panels, panel_rows, npanels, c, ldc, accumulate);
}

}  // namespace ferry::backends::cpu
#endif
