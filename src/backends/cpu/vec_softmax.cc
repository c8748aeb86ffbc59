// Highway compiles the kernel part of this file once per target (foreach_target.h re-includes it);
// HWY_ONCE marks the part compiled once: the parallel loop and the dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_softmax.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/vec_partial-inl.h"
#include "backends/cpu/vec_softmax.h"

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One group of `lanes` (<= a vector) adjacent inner positions: x[a * inner + j] for a < axis, j < lanes.
// A partial group goes through padded vectors (vec_partial-inl.h) so it takes the same instructions as
// a full one.
void SoftmaxColumnsF32(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t axis, int64_t inner,
                       size_t lanes, bool log) {
  const hn::ScalableTag<float> d;
  auto load = [&](const float* p) { return LoadPartial(d, p, lanes); };
  auto store = [&](hn::Vec<decltype(d)> v, float* p) { StorePartial(d, v, p, lanes); };
  auto m = hn::Set(d, -std::numeric_limits<float>::infinity());
  for (int64_t a = 0; a < axis; ++a) m = hn::Max(m, load(x + a * inner));
  auto sum = hn::Zero(d);
  for (int64_t a = 0; a < axis; ++a) {
    const auto e = hn::Exp(d, hn::Sub(load(x + a * inner), m));
    sum = hn::Add(sum, e);
    if (!log) store(e, y + a * inner);
  }
  if (log) {
    const auto shift = hn::Add(m, hn::Log(d, sum));
    for (int64_t a = 0; a < axis; ++a) store(hn::Sub(load(x + a * inner), shift), y + a * inner);
  } else {
    const auto inv = hn::Div(hn::Set(d, 1.0f), sum);
    for (int64_t a = 0; a < axis; ++a) store(hn::Mul(load(y + a * inner), inv), y + a * inner);
  }
}

// x[i] = exp(x[i] - max(x)) in place over one row; returns the sum of the results. A row holding a NaN,
// or whose max is +-inf (exp(inf - inf) is NaN for the reference too), becomes NaN and sums to NaN: Exp
// is not asked for what NaN operands give.
float ExpMinusMaxF32(float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto vm = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto nan = hn::Zero(d);
  size_t j = 0;
  for (; j + N <= n; j += N) {
    const auto v = hn::LoadU(d, x + j);
    vm = hn::Max(vm, v);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, vm));
  bool has_nan = !hn::AllFalse(d, hn::MaskFromVec(nan));
  for (; j < n; ++j) {
    has_nan = has_nan || std::isnan(x[j]);
    m = std::max(m, x[j]);
  }
  if (has_nan || !std::isfinite(m)) {
    std::fill(x, x + n, std::numeric_limits<float>::quiet_NaN());
    return std::numeric_limits<float>::quiet_NaN();
  }
  const auto shift = hn::Set(d, m);
  auto sum = hn::Zero(d);
  for (j = 0; j + N <= n; j += N) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + j), shift));
    hn::StoreU(e, d, x + j);
    sum = hn::Add(sum, e);
  }
  float s = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; j < n; ++j) s += (x[j] = std::exp(x[j] - m));
  return s;
}

size_t LanesF32() { return hn::Lanes(hn::ScalableTag<float>()); }

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(SoftmaxColumnsF32);
HWY_EXPORT(LanesF32);
HWY_EXPORT(ExpMinusMaxF32);

float vec_exp_minus_max(float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(ExpMinusMaxF32)(x, n); }

void vec_softmax_strided(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner, bool log) {
  const int64_t lanes = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(LanesF32)());
  const int64_t groups = (inner + lanes - 1) / lanes;
  auto* columns = HWY_DYNAMIC_DISPATCH(SoftmaxColumnsF32);
  const bool parallel = outer * axis * inner >= (int64_t{1} << 14);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < outer * groups; ++t) {
    const int64_t o = t / groups, j = (t % groups) * lanes;
    const int64_t offset = o * axis * inner + j;
    columns(x + offset, y + offset, axis, inner, static_cast<size_t>(std::min(lanes, inner - j)), log);
  }
}

}  // namespace ferry::backends::cpu
#endif
