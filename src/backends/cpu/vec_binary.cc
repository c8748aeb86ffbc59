// Highway compiles the kernel part of this file once per target (foreach_target.h re-includes it);
// HWY_ONCE marks the part compiled once: the broadcast plan, the outer loop and the dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/vec_binary.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>

#include "backends/cpu/vec_binary.h"

HWY_BEFORE_NAMESPACE();
namespace ferry::backends::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V>
HWY_INLINE V apply(VecBinary op, D, V a, V b) {
  switch (op) {
    case VecBinary::kAdd: return hn::Add(a, b);
    case VecBinary::kSub: return hn::Sub(a, b);
    case VecBinary::kMul: return hn::Mul(a, b);
    case VecBinary::kDiv: return hn::Div(a, b);
    case VecBinary::kMax: return hn::Max(a, b);
    case VecBinary::kMin: return hn::Min(a, b);
  }
  return a;
}

// out[i] = a[i * a_step] op b[i * b_step] for i < n; steps are 0 or 1. The tail goes through a
// padded vector so every element is computed by the same instructions (Max/Min NaN rules included).
void BinaryRunF32(VecBinary op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
                  size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto a_rep = hn::Set(d, a[0]);
  const auto b_rep = hn::Set(d, b[0]);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto va = a_step ? hn::LoadU(d, a + i) : a_rep;
    const auto vb = b_step ? hn::LoadU(d, b + i) : b_rep;
    hn::StoreU(apply(op, d, va, vb), d, out + i);
  }
  if (i < n) {
    HWY_ALIGN float ba[hn::MaxLanes(d)];
    HWY_ALIGN float bb[hn::MaxLanes(d)];
    for (size_t k = 0; k < N; ++k) {
      ba[k] = i + k < n ? a[a_step ? i + k : 0] : 1.0f;
      bb[k] = i + k < n ? b[b_step ? i + k : 0] : 1.0f;
    }
    hn::Store(apply(op, d, hn::Load(d, ba), hn::Load(d, bb)), d, ba);
    for (size_t k = 0; i + k < n; ++k) out[i + k] = ba[k];
  }
}

}  // namespace ferry::backends::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ferry::backends::cpu {

HWY_EXPORT(BinaryRunF32);

BroadcastPlan plan_broadcast(const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims,
                             const std::vector<int64_t>& out_dims) {
  const size_t rank = out_dims.size();
  // Right-aligned dims of each operand, and its row-major element strides (0 where it repeats).
  auto strides_of = [&](const std::vector<int64_t>& dims) {
    std::vector<int64_t> s(rank, 0);
    int64_t step = 1;
    for (size_t k = 0; k < dims.size(); ++k) {
      const size_t i = dims.size() - 1 - k, o = rank - 1 - k;
      s[o] = dims[i] == 1 && out_dims[o] != 1 ? 0 : step;
      step *= dims[i];
    }
    return s;
  };
  const std::vector<int64_t> sa = strides_of(a_dims), sb = strides_of(b_dims);
  // Merge runs of dims (size-1 dims dropped) where each operand either repeats in both or is
  // contiguous across both.
  struct Dim {
    int64_t size, a, b;
  };
  std::vector<Dim> merged;
  for (size_t o = 0; o < rank; ++o) {
    if (out_dims[o] == 1) continue;
    Dim cur{out_dims[o], sa[o], sb[o]};
    if (!merged.empty()) {
      Dim& prev = merged.back();
      const bool a_ok = (prev.a == 0 && cur.a == 0) || (prev.a != 0 && cur.a != 0 && prev.a == cur.a * cur.size);
      const bool b_ok = (prev.b == 0 && cur.b == 0) || (prev.b != 0 && cur.b != 0 && prev.b == cur.b * cur.size);
      if (a_ok && b_ok) {
        prev = Dim{prev.size * cur.size, cur.a, cur.b};
        continue;
      }
    }
    merged.push_back(cur);
  }
  BroadcastPlan p;
  for (int64_t d : out_dims) p.total *= d;
  if (merged.empty()) merged.push_back(Dim{1, 1, 1});
  const Dim last = merged.back();
  merged.pop_back();
  p.inner = last.size;
  p.a_inner = last.a == 0 ? 0 : 1;
  p.b_inner = last.b == 0 ? 0 : 1;
  for (const Dim& m : merged) {
    p.outer.push_back(m.size);
    p.a_outer.push_back(m.a);
    p.b_outer.push_back(m.b);
  }
  return p;
}

void vec_binary(VecBinary op, const BroadcastPlan& plan, const float* a, const float* b, float* out) {
  if (plan.total == 0) return;
  const int64_t runs = plan.total / plan.inner;
  const int dims = static_cast<int>(plan.outer.size());
  // Runs per thread chunk: small outputs stay on one thread (thread start-up costs more than they do).
  const bool parallel = plan.total >= (int64_t{1} << 15) && runs > 1;
  auto* run = HWY_DYNAMIC_DISPATCH(BinaryRunF32);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < runs; ++r) {
    int64_t rest = r, oa = 0, ob = 0;
    for (int k = dims - 1; k >= 0; --k) {
      const int64_t i = rest % plan.outer[k];
      rest /= plan.outer[k];
      oa += i * plan.a_outer[k];
      ob += i * plan.b_outer[k];
    }
    run(op, a + oa, plan.a_inner, b + ob, plan.b_inner, out + r * plan.inner, static_cast<size_t>(plan.inner));
  }
}

}  // namespace ferry::backends::cpu
#endif
