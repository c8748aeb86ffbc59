// Highway compiles the kernel part of this file once per target (foreach_target.h re-includes it);
// HWY_ONCE marks the part compiled once: the dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>

#include "backends/cpu/vec_attention.h"
#include "backends/cpu/vec_partial-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// q . k[j] for four keys at once (four independent FMA chains); lanes past D read as zero
// (vec_partial-inl.h).
void ScoresF32(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k, int64_t T, int64_t D, float scale,
               float* HWY_RESTRICT scores) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), dim = static_cast<size_t>(D);
  auto load = [&](const float* p, size_t c) { return LoadPartial(d, p + c, std::min(N, dim - c)); };
  int64_t j = 0;
  for (; j + 4 <= T; j += 4) {
    const float* k0 = k + j * D;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (size_t c = 0; c < dim; c += N) {
      const auto qv = load(q, c);
      a0 = hn::MulAdd(qv, load(k0, c), a0);
      a1 = hn::MulAdd(qv, load(k0 + D, c), a1);
      a2 = hn::MulAdd(qv, load(k0 + 2 * D, c), a2);
      a3 = hn::MulAdd(qv, load(k0 + 3 * D, c), a3);
    }
    scores[j] = scale * hn::GetLane(hn::SumOfLanes(d, a0));
    scores[j + 1] = scale * hn::GetLane(hn::SumOfLanes(d, a1));
    scores[j + 2] = scale * hn::GetLane(hn::SumOfLanes(d, a2));
    scores[j + 3] = scale * hn::GetLane(hn::SumOfLanes(d, a3));
  }
  for (; j < T; ++j) {
    auto a = hn::Zero(d);
    for (size_t c = 0; c < dim; c += N) a = hn::MulAdd(load(q, c), load(k + j * D, c), a);
    scores[j] = scale * hn::GetLane(hn::SumOfLanes(d, a));
  }
}

// y[c..c+4N) accumulated over every key in registers, chunk by chunk of Dv (V's rows read once a chunk);
// columns past Dv are neither read nor written.
void WeightedSumF32(const float* HWY_RESTRICT p, const float* HWY_RESTRICT v, int64_t T, int64_t Dv, float inv,
                    float* HWY_RESTRICT y) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), dim = static_cast<size_t>(Dv);
  for (size_t c0 = 0; c0 < dim; c0 += 4 * N) {
    const size_t n = std::min(4 * N, dim - c0);  // this chunk's columns
    const size_t vecs = (n + N - 1) / N, last = n - (vecs - 1) * N;  // lanes of the last vector
    auto load = [&](const float* r, size_t i) { return LoadPartial(d, r + c0 + i * N, i + 1 < vecs ? N : last); };
    auto y0 = hn::Zero(d), y1 = hn::Zero(d), y2 = hn::Zero(d), y3 = hn::Zero(d);
    for (int64_t j = 0; j < T; ++j) {
      const float* r = v + j * Dv;
      const auto pj = hn::Set(d, p[j]);
      y0 = hn::MulAdd(pj, load(r, 0), y0);
      if (vecs > 1) y1 = hn::MulAdd(pj, load(r, 1), y1);
      if (vecs > 2) y2 = hn::MulAdd(pj, load(r, 2), y2);
      if (vecs > 3) y3 = hn::MulAdd(pj, load(r, 3), y3);
    }
    const auto s = hn::Set(d, inv);
    const hn::Vec<decltype(d)> acc[4] = {y0, y1, y2, y3};
    for (size_t i = 0; i < vecs; ++i) StorePartial(d, hn::Mul(acc[i], s), y + c0 + i * N, i + 1 < vecs ? N : last);
  }
}

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(ScoresF32);
HWY_EXPORT(WeightedSumF32);

void vec_attention_scores(const float* q, const float* k, int64_t T, int64_t D, float scale, float* scores) {
  HWY_DYNAMIC_DISPATCH(ScoresF32)(q, k, T, D, scale, scores);
}
void vec_attention_weighted_sum(const float* p, const float* v, int64_t T, int64_t Dv, float inv, float* y) {
  HWY_DYNAMIC_DISPATCH(WeightedSumF32)(p, v, T, Dv, inv, y);
}

}  // namespace ferry::backends::cpu
#endif
