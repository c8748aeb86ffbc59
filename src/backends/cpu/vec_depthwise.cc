// Highway compiles this file once per target (foreach_target.h re-includes it); HWY_ONCE marks the
// part compiled once, which dispatches among the per-target functions.
//
// The loop: for each output row, blocks of 8 output pixels whose whole filter window lies inside the
// image (one set of loop bounds for all 8), single pixels at the borders (their clipped window); in
// each, every vector of channels: the accumulators start at the bias, take one multiply-add per filter
// tap (the tap's weights are one vector load shared by the 8 pixels), then the post-ops, then one store.
// A depthwise convolution does ~2 flops per byte it moves, so this is about keeping the loads few and
// the 8 accumulator chains independent (FMA latency), not about the arithmetic.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_depthwise.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <type_traits>

#include "backends/cpu/vec_depthwise.h"

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Vector registers of this target: the block sizes below keep accumulators and weights in them
// (32 zmm with AVX-512; 16 ymm/xmm on AVX2 and below, where the AVX-512 sizes spilled).
#if HWY_TARGET <= HWY_AVX3
constexpr int kVecRegs = 32;
#else
constexpr int kVecRegs = 16;
#endif

// The first tap index k (of `taps`, `dilation` apart from input index `start`) that lands in
// [0, size), and one past the last; begin >= end when none does.
HWY_INLINE int64_t first_tap(int64_t start, int64_t dilation) {
  return start >= 0 ? 0 : (-start + dilation - 1) / dilation;
}
HWY_INLINE int64_t end_tap(int64_t start, int64_t dilation, int64_t size, int64_t taps) {
  return start >= size ? 0 : std::min(taps, (size - start + dilation - 1) / dilation);
}

template <class D, class V>
HWY_INLINE V sigmoid(D d, V v) {
  // e^-|v| never overflows: 1 / (1 + e) for v >= 0, e / (1 + e) below.
  const V e = hn::Exp(d, hn::Neg(hn::Abs(v)));
  const V r = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  return hn::IfThenElse(hn::Lt(v, hn::Zero(d)), hn::Mul(e, r), r);
}

template <class D, class V>
HWY_INLINE V clamp01(D d, V v) {
  return hn::Min(hn::Max(v, hn::Zero(d)), hn::Set(d, 1.0f));
}

template <DepthwiseAct A, class D, class V>
HWY_INLINE V apply_act(D d, V v, const DepthwisePostOp& op) {
  const V zero = hn::Zero(d);
  if constexpr (A == DepthwiseAct::kRelu) return hn::IfThenElse(hn::Lt(v, zero), zero, v);
  if constexpr (A == DepthwiseAct::kLeakyRelu) return hn::IfThenElse(hn::Lt(v, zero), hn::Mul(v, hn::Set(d, op.alpha)), v);
  if constexpr (A == DepthwiseAct::kClip) {  // compare-and-select keeps NaN, as ONNX Clip does
    v = hn::IfThenElse(hn::Lt(v, hn::Set(d, op.alpha)), hn::Set(d, op.alpha), v);
    return hn::IfThenElse(hn::Gt(v, hn::Set(d, op.beta)), hn::Set(d, op.beta), v);
  }
  if constexpr (A == DepthwiseAct::kSigmoid) return sigmoid(d, v);
  if constexpr (A == DepthwiseAct::kSilu) return hn::Mul(v, sigmoid(d, v));
  if constexpr (A == DepthwiseAct::kHardSigmoid) return clamp01(d, hn::MulAdd(v, hn::Set(d, op.alpha), hn::Set(d, op.beta)));
  if constexpr (A == DepthwiseAct::kHardSwish)
    return hn::Mul(v, clamp01(d, hn::MulAdd(v, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f))));
  if constexpr (A == DepthwiseAct::kTanh) return hn::Tanh(d, v);
  if constexpr (A == DepthwiseAct::kElu)
    return hn::IfThenElse(hn::Lt(v, zero), hn::Mul(hn::Set(d, op.alpha), hn::Expm1(d, v)), v);
  if constexpr (A == DepthwiseAct::kAbs) return hn::Abs(v);
  if constexpr (A == DepthwiseAct::kMul) return hn::Mul(v, hn::Set(d, op.alpha));
  if constexpr (A == DepthwiseAct::kAdd) return hn::Add(v, hn::Set(d, op.alpha));
  return v;
}

// One post-op over `pixels` output pixels (C floats apart), channels [c0, c1).
template <DepthwiseAct A, class D>
HWY_NOINLINE void post_op_pixels(D d, float* HWY_RESTRICT y, int64_t pixels, int64_t C, int64_t c0, int64_t c1,
                                 const DepthwisePostOp& op) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto m = hn::FirstN(d, static_cast<size_t>((c1 - c0) % N));
  const int64_t c_full = c0 + (c1 - c0) / N * N;
  for (int64_t px = 0; px < pixels; ++px) {
    float* yp = y + px * C;
    for (int64_t c = c0; c < c_full; c += N) hn::StoreU(apply_act<A>(d, hn::LoadU(d, yp + c), op), d, yp + c);
    if (c_full < c1) hn::BlendedStore(apply_act<A>(d, hn::MaskedLoad(m, d, yp + c_full), op), m, d, yp + c_full);
  }
}

// The node's post-ops, in order, over pixels the kernel has just written (still in L1): one tight
// loop per op. Applying them to the accumulators in registers inlined every op's code into every
// block variant, and the instruction cache could not hold the result.
template <class D>
void apply_post_ops(D d, float* y, int64_t pixels, int64_t C, int64_t c0, int64_t c1, const DepthwisePostOp* ops,
                    int num_ops) {
  for (int i = 0; i < num_ops; ++i) {
    const DepthwisePostOp& op = ops[i];
    switch (op.act) {
#define FERRY_DW_ACT(name) \
  case DepthwiseAct::name: post_op_pixels<DepthwiseAct::name>(d, y, pixels, C, c0, c1, op); break;
      FERRY_DW_ACT(kRelu)
      FERRY_DW_ACT(kLeakyRelu)
      FERRY_DW_ACT(kClip)
      FERRY_DW_ACT(kSigmoid)
      FERRY_DW_ACT(kSilu)
      FERRY_DW_ACT(kHardSigmoid)
      FERRY_DW_ACT(kHardSwish)
      FERRY_DW_ACT(kTanh)
      FERRY_DW_ACT(kElu)
      FERRY_DW_ACT(kAbs)
      FERRY_DW_ACT(kMul)
      FERRY_DW_ACT(kAdd)
#undef FERRY_DW_ACT
    }
  }
}

// What one output row's pixel blocks share.
struct RowArgs {
  const float* x;     // the image
  const float* w;     // [k_h * k_w, cp]
  const float* bias;  // cp floats
  float* y_row;       // the output row
  int64_t ih0;        // input row of tap kh = 0
  int64_t kh0, kh1;   // the taps of the row that fall inside the image
  int64_t cp;
  const DepthwiseShape* s;
  const DepthwisePostOp* ops;
  int num_ops;
};

// P consecutive output pixels from `ow` (input column of tap kw = 0 for the first: iw0) times Q
// channel vectors from c, taps [kw0, kw1) for all of them: P * Q independent accumulator chains
// (an FMA's latency needs ~8 in flight), each tap's Q weight vectors loaded once for the P pixels.
// kMasked: one vector (Q = 1) of `lanes` < N channels, the channel tail.
template <int P, int Q, bool kMasked, class D>
HWY_INLINE void pixel_block(D d, const RowArgs& a, int64_t ow, int64_t iw0, int64_t kw0, int64_t kw1, int64_t c,
                            size_t lanes) {
  using V = hn::Vec<D>;
  const DepthwiseShape& s = *a.s;
  const int64_t C = s.channels;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t pixel_step = s.stride_w * C;
  const auto m = hn::FirstN(d, lanes);
  V acc[P * Q];
#pragma GCC unroll 16
  for (int q = 0; q < Q; ++q) {
    const V b = hn::LoadU(d, a.bias + c + q * N);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[p * Q + q] = b;
  }
  for (int64_t kh = a.kh0; kh < a.kh1; ++kh) {
    const float* xr = a.x + (a.ih0 + kh * s.dilation_h) * s.in_w * C + c;
    const float* wr = a.w + kh * s.k_w * a.cp + c;
    for (int64_t kw = kw0; kw < kw1; ++kw) {
      V wv[Q];
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) wv[q] = hn::LoadU(d, wr + kw * a.cp + q * N);
      const float* xp = xr + (iw0 + kw * s.dilation_w) * C;
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
#pragma GCC unroll 16
        for (int q = 0; q < Q; ++q) {
          const float* src = xp + p * pixel_step + q * N;
          const V xv = kMasked ? hn::MaskedLoad(m, d, src) : hn::LoadU(d, src);
          acc[p * Q + q] = hn::MulAdd(xv, wv[q], acc[p * Q + q]);
        }
      }
    }
  }
  float* yp = a.y_row + ow * C + c;
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q) {
      const V r = acc[p * Q + q];
      if (kMasked) {
        hn::BlendedStore(r, m, d, yp + p * C + q * N);
      } else {
        hn::StoreU(r, d, yp + p * C + q * N);
      }
    }
  }
}

// P pixels across channels [c_begin, c_end): as many channel vectors per block as keep P * Q <= 16
// accumulators (Q <= 8), fewer at the end, the masked tail last.
template <int P, class D>
HWY_INLINE void pixel_block_channels(D d, const RowArgs& a, int64_t ow, int64_t kw0, int64_t kw1, int64_t c_begin,
                                     int64_t c_end) {
  // P * Q accumulators in half the registers (16 with AVX-512: Q = 2, 4, 8 for P = 8, 4, 1).
  constexpr int kQ = std::max(1, std::min(kVecRegs / 4, kVecRegs / 2 / P));
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t iw0 = ow * a.s->stride_w - a.s->pad_w;
  int64_t c = c_begin;
  for (; c + kQ * N <= c_end; c += kQ * N) pixel_block<P, kQ, false>(d, a, ow, iw0, kw0, kw1, c, N);
  if constexpr (kQ > 2) {
    if (c + (kQ / 2) * N <= c_end) {
      pixel_block<P, kQ / 2, false>(d, a, ow, iw0, kw0, kw1, c, N);
      c += (kQ / 2) * N;
    }
  }
  if constexpr (kQ > 4) {
    if (c + 2 * N <= c_end) {
      pixel_block<P, 2, false>(d, a, ow, iw0, kw0, kw1, c, N);
      c += 2 * N;
    }
  }
  for (; c + N <= c_end; c += N) pixel_block<P, 1, false>(d, a, ow, iw0, kw0, kw1, c, N);
  if (c < c_end) pixel_block<P, 1, true>(d, a, ow, iw0, kw0, kw1, c, static_cast<size_t>(c_end - c));
}

// The fast path for filters K taps wide, column stride S, no column dilation (3x3, 5x5, 7x7 at
// stride 1 or 2: every depthwise layer of mobilenet, efficientnet and convnext). P output pixels
// times Q channel vectors per block; per filter row, each of the window's (P - 1) * S + K input
// vectors is loaded once and multiplied into every output it meets, with the row's K * Q weight
// vectors held in registers: ~(P * S + K) loads for P * K FMAs, where a load per FMA left the
// kernel load-bound. kEdge: some of the window's columns lie outside the image (they count as
// zeros); kMasked: one vector (Q = 1) of `lanes` < N channels, the channel tail.
template <int K, int S, int P, int Q, bool kEdge, bool kMasked, class D>
HWY_INLINE void reuse_block(D d, const RowArgs& a, int64_t ow, int64_t c, size_t lanes) {
  using V = hn::Vec<D>;
  constexpr int kSpan = (P - 1) * S + K;
  const DepthwiseShape& s = *a.s;
  const int64_t C = s.channels;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t iw0 = ow * S - s.pad_w;
  const int64_t j_lo = kEdge ? std::max<int64_t>(0, -iw0) : 0;  // window columns inside the image
  const int64_t j_hi = kEdge ? std::min<int64_t>(kSpan, s.in_w - iw0) : kSpan;
  const auto m = hn::FirstN(d, lanes);
  V acc[P * Q];
#pragma GCC unroll 16
  for (int q = 0; q < Q; ++q) {
    const V b = hn::LoadU(d, a.bias + c + q * N);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[p * Q + q] = b;
  }
  for (int64_t kh = a.kh0; kh < a.kh1; ++kh) {
    const float* xr = a.x + (a.ih0 + kh * s.dilation_h) * s.in_w * C + c;
    const float* wr = a.w + kh * K * a.cp + c;
    V wv[K * Q];
#pragma GCC unroll 16
    for (int kw = 0; kw < K; ++kw) {
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) wv[kw * Q + q] = hn::LoadU(d, wr + kw * a.cp + q * N);
    }
#pragma GCC unroll 32
    for (int j = 0; j < kSpan; ++j) {
      if (kEdge && (j < j_lo || j >= j_hi)) continue;
      const float* xp = xr + (iw0 + j) * C;
#pragma GCC unroll 16
      for (int q = 0; q < Q; ++q) {
        const V xv = kMasked ? hn::MaskedLoad(m, d, xp + q * N) : hn::LoadU(d, xp + q * N);
#pragma GCC unroll 16
        for (int kw = 0; kw < K; ++kw) {
          const int o = j - kw;  // input column j is tap kw of output o / S when o is a multiple of S
          if (o >= 0 && o % S == 0 && o / S < P) acc[(o / S) * Q + q] = hn::MulAdd(xv, wv[kw * Q + q], acc[(o / S) * Q + q]);
        }
      }
    }
  }
  float* yp = a.y_row + ow * C + c;
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 16
    for (int q = 0; q < Q; ++q) {
      const V r = acc[p * Q + q];
      if (kMasked) {
        hn::BlendedStore(r, m, d, yp + p * C + q * N);
      } else {
        hn::StoreU(r, d, yp + p * C + q * N);
      }
    }
  }
}

// P pixels from ow across channels [c_begin, c_end): blocks of Q vectors, single vectors after,
// the masked tail last.
template <int K, int S, int P, bool kEdge, class D>
HWY_INLINE void reuse_block_channels(D d, const RowArgs& a, int64_t ow, int64_t c_begin, int64_t c_end) {
  // K * Q weight vectors + P * Q accumulators (P = 8) + the input vector fit 32 registers for
  // K < 7 at Q = 2; 16 registers take Q = 1 only.
  constexpr int kQ = kVecRegs >= 32 && K < 7 ? 2 : 1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = c_begin;
  for (; c + kQ * N <= c_end; c += kQ * N) reuse_block<K, S, P, kQ, kEdge, false>(d, a, ow, c, N);
  if constexpr (kQ > 1) {
    for (; c + N <= c_end; c += N) reuse_block<K, S, P, 1, kEdge, false>(d, a, ow, c, N);
  }
  if (c < c_end) reuse_block<K, S, P, 1, kEdge, true>(d, a, ow, c, static_cast<size_t>(c_end - c));
}

// One output row's pixels, channels [c_begin, c_end), on the fast path: blocks of 8 pixels, then
// 4, 2, 1; a block whose window crosses the image's left or right edge takes the checked variant.
template <int K, int S, class D>
void reuse_row(D d, const RowArgs& a, int64_t full_lo, int64_t full_hi, int64_t c_begin, int64_t c_end) {
  const int64_t out_w = a.s->out_w;
  int64_t ow = 0;
  auto run = [&](auto p_tag) {
    constexpr int P = decltype(p_tag)::value;
    if (ow >= full_lo && ow + P <= full_hi) {
      reuse_block_channels<K, S, P, false>(d, a, ow, c_begin, c_end);
    } else {
      reuse_block_channels<K, S, P, true>(d, a, ow, c_begin, c_end);
    }
    ow += P;
  };
  while (ow + 8 <= out_w) run(std::integral_constant<int, 8>());
  if (ow + 4 <= out_w) run(std::integral_constant<int, 4>());
  if (ow + 2 <= out_w) run(std::integral_constant<int, 2>());
  if (ow < out_w) run(std::integral_constant<int, 1>());
}

// The fast path's row function for the node's filter width and column stride, or null.
template <class D>
using ReuseRowFn = void (*)(D, const RowArgs&, int64_t, int64_t, int64_t, int64_t);
template <class D>
ReuseRowFn<D> pick_reuse_row(const DepthwiseShape& s) {
  if (s.dilation_w != 1) return nullptr;
  const int64_t key = s.k_w * 10 + s.stride_w;
  switch (key) {
    case 31: return &reuse_row<3, 1, D>;
    case 32: return &reuse_row<3, 2, D>;
    case 51: return &reuse_row<5, 1, D>;
    case 52: return &reuse_row<5, 2, D>;
    case 71: return &reuse_row<7, 1, D>;
    case 72: return &reuse_row<7, 2, D>;
    default: return nullptr;
  }
}

void DepthwiseRowsF32(const float* HWY_RESTRICT x, const float* HWY_RESTRICT w, const float* HWY_RESTRICT bias,
                      float* HWY_RESTRICT y, const DepthwiseShape& s, const DepthwisePostOp* ops, int num_ops,
                      int64_t row_begin, int64_t row_end, int64_t c_begin, int64_t c_end) {
  const hn::ScalableTag<float> d;
  // The output columns whose whole window is inside the image: an interval [full_lo, full_hi).
  auto is_full = [&](int64_t ow) {
    const int64_t iw0 = ow * s.stride_w - s.pad_w;
    return first_tap(iw0, s.dilation_w) == 0 && end_tap(iw0, s.dilation_w, s.in_w, s.k_w) == s.k_w;
  };
  int64_t full_lo = 0, full_hi = s.out_w;
  while (full_lo < s.out_w && !is_full(full_lo)) ++full_lo;
  while (full_hi > full_lo && !is_full(full_hi - 1)) --full_hi;
  RowArgs a{x, w, bias, nullptr, 0, 0, 0, depthwise_padded_channels(s.channels), &s, ops, num_ops};
  // Channels in chunks of 128, outermost: a chunk's weights (k_h * k_w * 512 bytes) and the
  // input rows its output rows read stay in L1 across the rows, where sweeping all channels per
  // pixel (7x7x1152, 5x5) streamed every tap from L2 and ran at a third of the speed.
  constexpr int64_t chunk = 128;  // channels: 8 AVX-512 vectors, 16 AVX2 ones
  const ReuseRowFn<decltype(d)> reuse = pick_reuse_row<decltype(d)>(s);
  for (int64_t cc = c_begin; cc < c_end; cc += chunk) {
    const int64_t ce = std::min(c_end, cc + chunk);
    auto border = [&](int64_t ow) {
      const int64_t iw0 = ow * s.stride_w - s.pad_w;
      const int64_t kw0 = first_tap(iw0, s.dilation_w);
      const int64_t kw1 = std::max(kw0, end_tap(iw0, s.dilation_w, s.in_w, s.k_w));
      pixel_block_channels<1>(d, a, ow, kw0, kw1, cc, ce);
    };
    for (int64_t oh = row_begin; oh < row_end; ++oh) {
      a.y_row = y + oh * s.out_w * s.channels;
      a.ih0 = oh * s.stride_h - s.pad_h;
      a.kh0 = first_tap(a.ih0, s.dilation_h);
      a.kh1 = std::max(a.kh0, end_tap(a.ih0, s.dilation_h, s.in_h, s.k_h));
      if (reuse) {
        reuse(d, a, full_lo, full_hi, cc, ce);
        apply_post_ops(d, a.y_row, s.out_w, s.channels, cc, ce, ops, num_ops);
        continue;
      }
      for (int64_t ow = 0; ow < full_lo; ++ow) border(ow);
      int64_t ow = full_lo;
      for (; ow + 8 <= full_hi; ow += 8) pixel_block_channels<8>(d, a, ow, 0, s.k_w, cc, ce);
      for (; ow + 4 <= full_hi; ow += 4) pixel_block_channels<4>(d, a, ow, 0, s.k_w, cc, ce);
      for (; ow < full_hi; ++ow) pixel_block_channels<1>(d, a, ow, 0, s.k_w, cc, ce);
      for (ow = std::max(full_hi, full_lo); ow < s.out_w; ++ow) border(ow);
      apply_post_ops(d, a.y_row, s.out_w, s.channels, cc, ce, ops, num_ops);
    }
  }
}

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(DepthwiseRowsF32);

void vec_depthwise_rows(const float* x, const float* w, const float* bias, float* y, const DepthwiseShape& s,
                        const DepthwisePostOp* ops, int num_ops, int64_t row_begin, int64_t row_end, int64_t c_begin,
                        int64_t c_end) {
  HWY_DYNAMIC_DISPATCH(DepthwiseRowsF32)(x, w, bias, y, s, ops, num_ops, row_begin, row_end, c_begin, c_end);
}

}  // namespace ferry::backends::cpu
#endif
