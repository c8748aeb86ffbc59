#include "backends/cpu/isa_probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <dnnl.hpp>

namespace ferry::backends::cpu {

namespace {

constexpr int kIters = 4096;  // x 12 independent chains: ~50k instructions, tens of microseconds

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 12 independent accumulator chains hide the latency of either instruction on any core with two FMA
// ports; the sums feed the return value so nothing is optimised away. Each chain starts from its own
// value: identical chains would be folded into one by the compiler.
#define FERRY_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"), noinline)) double fma_seconds(float* sink, int iters = kIters) {
  const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-6f);
#define DECL(i) __m512 a##i = _mm512_set1_ps(1e-3f * (i));
  FERRY_CHAINS(DECL)
#undef DECL
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iters; ++it) {
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, b, c);
    FERRY_CHAINS(STEP)
#undef STEP
  }
  const double s = seconds_since(t0);
  __m512 sum = _mm512_setzero_ps();
#define ADD(i) sum = _mm512_add_ps(sum, a##i);
  FERRY_CHAINS(ADD)
#undef ADD
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  for (float v : lanes) *sink += v;
  return s;
}

// The same on 256-bit FMAs, for CPUs without AVX-512 (Zen 2/3, client cores).
__attribute__((target("avx2,fma"), noinline)) double fma256_seconds(float* sink, int iters) {
  const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-6f);
#define DECL(i) __m256 a##i = _mm256_set1_ps(1e-3f * (i));
  FERRY_CHAINS(DECL)
#undef DECL
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iters; ++it) {
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, b, c);
    FERRY_CHAINS(STEP)
#undef STEP
  }
  const double s = seconds_since(t0);
  __m256 sum = _mm256_setzero_ps();
#define ADD(i) sum = _mm256_add_ps(sum, a##i);
  FERRY_CHAINS(ADD)
#undef ADD
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  for (float v : lanes) *sink += v;
  return s;
}

__attribute__((target("avx512f,avx512bf16"), noinline)) double dot_seconds(float* sink) {
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80), c = (__m512bh)_mm512_set1_epi16(0x3a83);  // 1, 1e-3
#define DECL(i) __m512 a##i = _mm512_set1_ps(float(i));  // distinct, or the compiler merges the chains
  FERRY_CHAINS(DECL)
#undef DECL
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < kIters; ++it) {
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, b, c);
    FERRY_CHAINS(STEP)
#undef STEP
  }
  const double s = seconds_since(t0);
  __m512 sum = _mm512_setzero_ps();
#define ADD(i) sum = _mm512_add_ps(sum, a##i);
  FERRY_CHAINS(ADD)
#undef ADD
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  for (float v : lanes) *sink += v;
  return s;
}
#undef FERRY_CHAINS

}  // namespace

bool isa_has(dnnl::cpu_isa want) {
  // The ISA values are feature masks: avx512_core_amx includes avx512_core_bf16.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto w = static_cast<unsigned>(want);
  return (isa & w) == w;
}

double measure_bf16_dot_vs_fma() {
  float sink = 0;
  double fma = 1e30, dot = 1e30;
  for (int round = 0; round < 7; ++round) {  // interleaved, best of each: a descheduled round is dropped
    fma = std::min(fma, fma_seconds(&sink));
    dot = std::min(dot, dot_seconds(&sink));
  }
  if (sink == 12345.0f) fma += 1e-12;  // keeps `sink` observable
  // Flops: an FMA lane does 2, a dot-product lane 4 (two bf16 pairs), over 16 lanes each.
  return (4.0 / dot) / (2.0 / fma);
}

double measure_fp32_peak_gflops(int threads) {
  // The widest FMA the kernels use: oneDNN and Highway pick AVX-512 where it is there, else AVX2.
  const bool wide = isa_has(dnnl::cpu_isa::avx512_core);
  if (!wide && !isa_has(dnnl::cpu_isa::avx2)) return 0;
  const double lanes = wide ? 16 : 8;
  constexpr int kPeakIters = 1 << 18;  // ~0.5 ms a round at 2 FMAs a cycle
  double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    float sink = 0;
    double best = 1e30;
    for (int round = 0; round < 40; ++round)
      best = std::min(best, wide ? fma_seconds(&sink, kPeakIters) : fma256_seconds(&sink, kPeakIters));
    total += (kPeakIters * 12.0 * lanes * 2) / best * 1e-9 + (sink == 12345.0f ? 1e-12 : 0);
  }
  return total;
}

}  // namespace ferry::backends::cpu
