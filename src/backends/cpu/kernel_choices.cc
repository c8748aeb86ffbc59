#include "backends/cpu/kernel_choices.h"

#include <cpuid.h>

#include <cstdio>
#include <cstring>

#include <dnnl.hpp>

#include "backends/cpu/isa_probe.h"

namespace ferry::backends::cpu {

namespace {

// CPUID leaf 0's vendor string ("GenuineIntel", "AuthenticAMD", ...).
std::string cpu_vendor() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return "unknown";
  char v[13];
  std::memcpy(v, &b, 4);
  std::memcpy(v + 4, &d, 4);
  std::memcpy(v + 8, &c, 4);
  v[12] = '\0';
  return v;
}

bool has_avx2_fma() { return isa_has(dnnl::cpu_isa::avx2) && __builtin_cpu_supports("fma"); }

#ifdef FERRY_HAVE_MKL
constexpr bool kMklBuilt = true;
#else
constexpr bool kMklBuilt = false;
#endif

// The bf16 dot-product rate against fp32 FMAs: a millisecond probe, once per process.
double bf16_dot_vs_fma_once() {
  static const double r = measure_bf16_dot_vs_fma();
  return r;
}

}  // namespace

GemmChoice choose_gemm(const CpuOptions& o) {
  GemmChoice c;
  c.few_rows = has_avx2_fma() && (o.gemm == CpuGemm::kAuto || o.gemm == CpuGemm::kOwn);
  switch (o.gemm) {
    case CpuGemm::kOnednn:
      c.why = "--cpu-gemm onednn";
      return c;
    case CpuGemm::kOwn:
      if (has_avx2_fma()) c.used = CpuGemm::kOwn, c.why = "--cpu-gemm own";
      else c.why = "--cpu-gemm own, but this CPU has no AVX2+FMA: oneDNN";
      return c;
    case CpuGemm::kMkl:
      if (kMklBuilt) c.used = CpuGemm::kMkl, c.why = "--cpu-gemm mkl";
      else c.why = "--cpu-gemm mkl, but this build has no MKL (CMake found none): oneDNN";
      return c;
    case CpuGemm::kAuto: break;
  }
  if (has_avx2_fma() && !isa_has(dnnl::cpu_isa::avx512_core)) {
    c.used = CpuGemm::kOwn;
    c.why = "AVX2 without AVX-512: oneDNN 2.6's gemm repacks B every call";
    return c;
  }
  const std::string vendor = cpu_vendor();
  if (!kMklBuilt) {
    c.why = "AVX-512, and this build has no MKL: oneDNN's brgemm matmul";
  } else if (vendor == "GenuineIntel") {
    c.used = CpuGemm::kMkl;
    c.why = "Intel CPU: K, N >= 512 Linear layers measured 8-30% faster than oneDNN";
  } else {
    c.why = vendor + " CPU: MKL's code paths for it measured 2.5x slower than oneDNN's matmul (--cpu-gemm mkl forces it)";
  }
  return c;
}

Bf16Choice choose_bf16(const CpuOptions& o) {
  Bf16Choice c;
  c.supported = isa_has(dnnl::cpu_isa::avx512_core_bf16);
  if (!c.supported) {
    // The CPU may have it while oneDNN is capped below it (ONEDNN_MAX_CPU_ISA): say which.
    c.why = __builtin_cpu_supports("avx512bf16") ? "oneDNN dispatches below avx512_bf16 here (ONEDNN_MAX_CPU_ISA)"
                                                 : "this CPU has no avx512_bf16: --precision bf16 here is for bf16's "
                                                   "numerics, not for speed";
    if (o.bf16 == Choice::kOn) c.why += " (--cpu-bf16 on cannot apply)";
    return c;
  }
  if (o.bf16 == Choice::kOff) {
    c.why = "--cpu-bf16 off";
    return c;
  }
  if (o.bf16 == Choice::kOn) {
    c.native = true;
    c.why = "--cpu-bf16 on";
    return c;
  }
  if (isa_has(dnnl::cpu_isa::avx512_core_amx)) {
    c.native = true;
    c.why = "this CPU has AMX";
    return c;
  }
  c.dot_vs_fma = bf16_dot_vs_fma_once();
  c.native = c.dot_vs_fma >= 1.0;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1fx", c.dot_vs_fma);
  c.why = std::string("avx512_bf16 dot products measured ") + rate + " the fp32 FMA flop rate";
  if (!c.native)
    c.why += " here and there is no AMX, so fp32 arithmetic is faster: --precision bf16 on this CPU is for bf16's "
             "numerics (what a bf16 device computes), not for speed; --cpu-bf16 on forces native";
  return c;
}

bool winograd_allowed(const CpuOptions& o) { return o.winograd != Choice::kOff; }

bool own_depthwise_chosen(const CpuOptions& o) { return o.own_depthwise == Choice::kOn; }

std::vector<std::string> describe_kernel_choices(const CpuOptions& o) {
  std::vector<std::string> out;
  const GemmChoice g = choose_gemm(o);
  const char* gemm = g.used == CpuGemm::kMkl ? "MKL packed sgemm" : g.used == CpuGemm::kOwn ? "own packed AVX2 GEMM" : "oneDNN matmul";
  const char* few = g.few_rows ? "; up to 15 rows (decoder steps, batch-1 heads): the own GEMM's few-rows path, bound by memory bandwidth" : "";
  out.push_back(std::string("GEMM (fp32 Linear layers): ") + gemm + " (" + g.why + ")" + few);
  const Bf16Choice b = choose_bf16(o);
  out.push_back(std::string("bf16 Conv/MatMul: ") + (b.native ? "native" : "emulated") + " (" + b.why + ")");
  out.push_back(std::string("Winograd 3x3 conv: ") +
                (winograd_allowed(o) ? "where measured faster (3x3, stride 1, >= 32 channels)" : "off (--cpu-winograd off)"));
  std::string blocked = "auto: nChw16c jit_1x1 for 1x1 convs of streaming CNNs";
  if (!isa_has(dnnl::cpu_isa::avx512_core)) blocked = "not used: no AVX-512 (oneDNN's `any` picks jit_1x1 on nChw8c itself)";
  else if (o.blocked_1x1 == Choice::kOn) blocked = "on for every 1x1 conv (--cpu-blocked-1x1 on)";
  else if (o.blocked_1x1 == Choice::kOff) blocked = "off (--cpu-blocked-1x1 off)";
  out.push_back("blocked 1x1 conv: " + blocked);
  out.push_back(std::string("depthwise conv: ") +
                (own_depthwise_chosen(o) ? "own channels-last kernel (--cpu-own-depthwise on)"
                                         : "oneDNN (the own kernel measured slower in networks; --cpu-own-depthwise on)"));
  return out;
}

}  // namespace ferry::backends::cpu
