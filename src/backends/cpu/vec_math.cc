// Highway compiles this file once per target (foreach_target.h re-includes it); HWY_ONCE marks the
// part compiled once, which exports the per-target functions and dispatches among them.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_math.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <cmath>
#include <limits>

#include "backends/cpu/vec_math.h"

#ifndef FERRY_VEC_MATH_SLEEF_DECLS
#define FERRY_VEC_MATH_SLEEF_DECLS
#include <immintrin.h>
// sleef.h declares its vector functions only when the whole file is compiled for that ISA; Highway
// compiles each target's code with target attributes instead, so the two entry points are declared here.
extern "C" __m512 Sleef_erff16_u10avx512f(__m512);
extern "C" __m256 Sleef_erff8_u10avx2(__m256);
#endif

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V>
HWY_INLINE V erf_vec(D d, V x) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  (void)d;
  return V{Sleef_erff16_u10avx512f(x.raw)};
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  (void)d;
  return V{Sleef_erff8_u10avx2(x.raw)};
#else
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  hn::Store(x, d, buf);
  for (size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = std::erf(buf[i]);
  return hn::Load(d, buf);
#endif
}

// Highway's contrib/math functions are accurate on finite arguments in their domain only; these give
// IEEE results elsewhere (log of 0, negatives, inf, NaN; sin/cos of inf), as std:: does.
template <class D, class V>
HWY_INLINE V log_ieee(D d, V x) {
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  V r = hn::Log(d, x);
  r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, std::numeric_limits<float>::quiet_NaN()), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}
template <class D, class V>
HWY_INLINE V finite_only(D d, V x, V r) {
  return hn::IfThenElse(hn::IsFinite(x), r, hn::Set(d, std::numeric_limits<float>::quiet_NaN()));
}

template <class D, class V>
HWY_INLINE V apply(VecUnary op, D d, V x) {
  switch (op) {
    case VecUnary::kLog: return log_ieee(d, x);
    case VecUnary::kErf: return erf_vec(d, x);
    case VecUnary::kSin: return finite_only(d, x, hn::Sin(d, x));
    case VecUnary::kCos: return finite_only(d, x, hn::Cos(d, x));
    case VecUnary::kAtan: return hn::Atan(d, x);
    case VecUnary::kSoftplus: {
      // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, no cancellation for small.
      const V e = hn::Exp(d, hn::Neg(hn::Abs(x)));
      return hn::IfThenElse(hn::IsNaN(x), x, hn::Add(hn::Max(x, hn::Zero(d)), hn::Log1p(d, e)));
    }
    case VecUnary::kSoftsign: return hn::Div(x, hn::Add(hn::Set(d, 1.0f), hn::Abs(x)));
    case VecUnary::kReciprocal: return hn::Div(hn::Set(d, 1.0f), x);
    case VecUnary::kFloor: return hn::Floor(x);
    case VecUnary::kCeil: return hn::Ceil(x);
    case VecUnary::kRound: return hn::Round(x);  // ties to even, as ONNX Round
    case VecUnary::kRoundFp16: {
      const hn::Rebind<hwy::float16_t, D> dh;
      return hn::PromoteTo(d, hn::DemoteTo(dh, x));  // F16C on x86: round to nearest even
    }
    case VecUnary::kRoundBf16: {
      // bf16 is float32's upper half: add 0x7fff plus the lowest kept bit (ties to even), clear the rest.
      const hn::RebindToUnsigned<D> du;
      const auto u = hn::BitCast(du, x);
      const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
      const auto r = hn::And(hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), lsb)), hn::Set(du, 0xffff0000u));
      return hn::IfThenElse(hn::IsNaN(x), x, hn::BitCast(d, r));
    }
  }
  return x;
}

void UnaryF32(VecUnary op, const float* HWY_RESTRICT x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(apply(op, d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    // The tail through a full vector padded with ones (defined for every op here, Log included).
    HWY_ALIGN float buf[hn::MaxLanes(d)];
    for (size_t k = 0; k < N; ++k) buf[k] = i + k < n ? x[i + k] : 1.0f;
    hn::Store(apply(op, d, hn::Load(d, buf)), d, buf);
    for (size_t k = 0; i + k < n; ++k) y[i + k] = buf[k];
  }
}

// acc[j] += sum over r < rows of x[r * stride + j], for j < lanes: four vectors of lanes at a time
// stay in registers across all rows (the sums are memory-bound; the accumulators must not be).
void AccumulateRowsF32(const float* HWY_RESTRICT x, size_t rows, size_t lanes, size_t stride, float* HWY_RESTRICT acc) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t j = 0;
  for (; j + 4 * N <= lanes; j += 4 * N) {
    auto a0 = hn::LoadU(d, acc + j), a1 = hn::LoadU(d, acc + j + N);
    auto a2 = hn::LoadU(d, acc + j + 2 * N), a3 = hn::LoadU(d, acc + j + 3 * N);
    for (size_t r = 0; r < rows; ++r) {
      const float* row = x + r * stride + j;
      a0 = hn::Add(a0, hn::LoadU(d, row));
      a1 = hn::Add(a1, hn::LoadU(d, row + N));
      a2 = hn::Add(a2, hn::LoadU(d, row + 2 * N));
      a3 = hn::Add(a3, hn::LoadU(d, row + 3 * N));
    }
    hn::StoreU(a0, d, acc + j);
    hn::StoreU(a1, d, acc + j + N);
    hn::StoreU(a2, d, acc + j + 2 * N);
    hn::StoreU(a3, d, acc + j + 3 * N);
  }
  for (; j + N <= lanes; j += N) {
    auto a = hn::LoadU(d, acc + j);
    for (size_t r = 0; r < rows; ++r) a = hn::Add(a, hn::LoadU(d, x + r * stride + j));
    hn::StoreU(a, d, acc + j);
  }
  for (; j < lanes; ++j) {
    float a = acc[j];
    for (size_t r = 0; r < rows; ++r) a += x[r * stride + j];
    acc[j] = a;
  }
}

// sum of x[i] for i < n (four vector accumulators, then the tail).
float SumF32(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * N));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * N));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, hn::LoadU(d, x + i));
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) sum += x[i];
  return sum;
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(UnaryF32);
HWY_EXPORT(TargetName);
HWY_EXPORT(AccumulateRowsF32);
HWY_EXPORT(SumF32);

void vec_unary(VecUnary op, const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(UnaryF32)(op, x, y, n); }

void vec_accumulate_rows(const float* x, size_t rows, size_t lanes, size_t stride, float* acc) {
  HWY_DYNAMIC_DISPATCH(AccumulateRowsF32)(x, rows, lanes, stride, acc);
}

float vec_sum(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(SumF32)(x, n); }

std::string vec_math_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace ferry::backends::cpu
#endif
