// Highway compiles the kernel part of this file once per target (foreach_target.h re-includes it);
// HWY_ONCE marks the part compiled once: the dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_rnn.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "backends/cpu/vec_rnn.h"

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Hidden units in vectors; a partial last vector goes through padded buffers, so every unit takes the
// same instructions.
template <class D>
struct Lanes {
  D d;
  size_t n, i = 0, count = 0;
  HWY_ALIGN float buf[8][hn::MaxLanes(D())];
  hn::Vec<D> load(const float* p, int slot) {
    if (count == hn::Lanes(d)) return hn::LoadU(d, p + i);
    for (size_t k = 0; k < hn::Lanes(d); ++k) buf[slot][k] = k < count ? p[i + k] : 0.0f;
    return hn::Load(d, buf[slot]);
  }
  void store(hn::Vec<D> v, float* p, int slot) {
    if (count == hn::Lanes(d)) return hn::StoreU(v, d, p + i);
    hn::Store(v, d, buf[slot]);
    for (size_t k = 0; k < count; ++k) p[i + k] = buf[slot][k];
  }
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
    const auto c_prev = l.load(c, 0);
    auto gi = l.load(g, 1), go = l.load(g + H, 2), gf = l.load(g + 2 * H, 3);
    const auto gc = l.load(g + 3 * H, 4);
    if (p) {
      gi = hn::MulAdd(l.load(p, 5), c_prev, gi);
      gf = hn::MulAdd(l.load(p + 2 * H, 6), c_prev, gf);
    }
    const auto i = sigmoid(d, clip_to(d, gi, clip));
    const auto f = input_forget ? hn::Sub(hn::Set(d, 1.0f), i) : sigmoid(d, clip_to(d, gf, clip));
    const auto cc = hn::Tanh(d, clip_to(d, gc, clip));
    const auto cn = hn::MulAdd(f, c_prev, hn::Mul(i, cc));
    if (p) go = hn::MulAdd(l.load(p + H, 7), cn, go);
    const auto o = sigmoid(d, clip_to(d, go, clip));
    l.store(cn, c, 0);
    l.store(hn::Mul(o, hn::Tanh(d, cn)), h, 1);
  }
}

void GruCellF32(const float* g, const float* hr, int64_t hidden, float clip, float* h) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    const auto z = sigmoid(d, clip_to(d, l.load(g, 0), clip));
    const auto hh = hn::Tanh(d, clip_to(d, hn::Add(l.load(g + 2 * H, 1), l.load(hr, 2)), clip));
    // (1 - z) * hh + z * h = hh + z * (h - hh)
    const auto hp = l.load(h, 3);
    l.store(hn::MulAdd(z, hn::Sub(hp, hh), hh), h, 3);
  }
}

void GruResetF32(const float* g_r, const float* x, const float* b, int64_t hidden, float clip, float* out) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    const auto r = sigmoid(d, clip_to(d, l.load(g_r, 0), clip));
    const auto v = b ? hn::Add(l.load(x, 1), l.load(b, 2)) : l.load(x, 1);
    l.store(hn::Mul(r, v), out, 3);
  }
}

void RnnCellF32(const float* g, int64_t hidden, float clip, float* h) {
  const hn::ScalableTag<float> d;
  Lanes<decltype(d)> l{d, static_cast<size_t>(hidden)};
  const size_t H = l.n, N = hn::Lanes(d);
  for (l.i = 0; l.i < H; l.i += N) {
    l.count = std::min(N, H - l.i);
    l.store(hn::Tanh(d, clip_to(d, l.load(g, 0), clip)), h, 0);
  }
}

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(LstmCellF32);
HWY_EXPORT(GruCellF32);
HWY_EXPORT(RnnCellF32);
HWY_EXPORT(GruResetF32);

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

}  // namespace ferry::backends::cpu
#endif
