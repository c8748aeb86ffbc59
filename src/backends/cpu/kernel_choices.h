// Where the cpu backend has more than one kernel for a node, which it takes: from the typed
// CpuOptions (backends/backend_options.h, set by flags) and, where they say `auto`, from what this CPU
// is and what was measured on such CPUs. Every choice comes with the reason reports and `ferry doctor`
// print. Each path can be forced on any machine that can run it, so tests force it instead of hoping
// the CPU picks it.
#pragma once
#include <string>
#include <vector>

#include "backends/backend_options.h"

namespace ferry::backends::cpu {

struct GemmChoice {
  CpuGemm used = CpuGemm::kOnednn;  // kMkl, kOwn or kOnednn
  std::string why;
  // Products of up to VecPackedB::kFewRows rows take the own GEMM's few-rows path: on an AVX2+FMA CPU
  // unless --cpu-gemm names MKL or oneDNN (bench/README.md, "Few-rows Linear layers").
  bool few_rows = false;
};
// MKL: built with it, and an Intel CPU (measured 8-30% faster than oneDNN there, 2.5x slower on AMD
// Zen 5). Own packed GEMM: an AVX2+FMA CPU without AVX-512 (oneDNN 2.6's AVX2 gemm repacks B every
// call). A forced path this build or CPU cannot run falls back to oneDNN, and `why` says so.
GemmChoice choose_gemm(const CpuOptions& o);

struct Bf16Choice {
  bool supported = false;  // oneDNN dispatches to avx512_core_bf16 or above on this CPU
  bool native = false;     // the choice: run marked Conv/MatMul in bf16
  double dot_vs_fma = 0;   // measured flop rate of vdpbf16ps / vfmadd (0: not measured)
  std::string why;         // "this CPU has AMX", "--cpu-bf16 off", ...
};
// AMX means native; avx512_bf16 without AMX means native only where the throughput probe
// (isa_probe.h, measured once per process) finds the dot product at least at the FMA rate.
Bf16Choice choose_bf16(const CpuOptions& o);

// Winograd 3x3 kernels allowed (they are still taken only where measured faster: conv.cc).
bool winograd_allowed(const CpuOptions& o);
// The own channels-last depthwise kernel (auto: off; depthwise_conv.cc says why).
bool own_depthwise_chosen(const CpuOptions& o);

// One line per choice, "GEMM (fp32 Linear layers): own packed AVX2 GEMM (AVX2 without AVX-512 ...)".
std::vector<std::string> describe_kernel_choices(const CpuOptions& o);

}  // namespace ferry::backends::cpu
