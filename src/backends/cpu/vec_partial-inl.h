// Per-target Highway helpers for the cpu backend's vector kernels (vec_*.cc): a vector's worth of
// floats that may be the partial last one of a row. Highway's -inl.h pattern: included after
// <hwy/highway.h> by a file that foreach_target.h compiles once per target, so the guard toggles with
// HWY_TARGET_TOGGLE. Partial vectors go through an aligned buffer rather than masked loads and stores,
// which may touch (and fault on) memory past the row on some targets.
#if defined(FERRY_BACKENDS_CPU_VEC_PARTIAL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FERRY_BACKENDS_CPU_VEC_PARTIAL_INL_H_
#undef FERRY_BACKENDS_CPU_VEC_PARTIAL_INL_H_
#else
#define FERRY_BACKENDS_CPU_VEC_PARTIAL_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace vp = hwy::HWY_NAMESPACE;

// The first n (<= a vector) floats at p, the other lanes zero.
template <class D>
HWY_INLINE vp::Vec<D> LoadPartial(D d, const float* HWY_RESTRICT p, size_t n) {
  if (n == vp::Lanes(d)) return vp::LoadU(d, p);
  HWY_ALIGN float buf[vp::MaxLanes(D())] = {};
  for (size_t k = 0; k < n; ++k) buf[k] = p[k];
  return vp::Load(d, buf);
}

// v's first n (<= a vector) lanes to p; nothing past them is written.
template <class D>
HWY_INLINE void StorePartial(D d, vp::Vec<D> v, float* HWY_RESTRICT p, size_t n) {
  if (n == vp::Lanes(d)) return vp::StoreU(v, d, p);
  HWY_ALIGN float buf[vp::MaxLanes(D())];
  vp::Store(v, d, buf);
  for (size_t k = 0; k < n; ++k) p[k] = buf[k];
}

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // FERRY_BACKENDS_CPU_VEC_PARTIAL_INL_H_
