// What a backend is asked to do besides running nodes: its thread count and, for the cpu backend, which
// kernels to take where it has a choice. These are typed options set from flags (`--cpu-gemm` ...),
// recorded in reports and in a .ferry file's compile options, so a run says how it was made and any
// machine can be made to take any path (tests force each one instead of hoping the CPU picks it).
#pragma once
#include <string>

#include "core/status.h"

namespace ferry::backends {

// kAuto: the backend decides from what this CPU is and what was measured on such CPUs.
enum class Choice { kAuto, kOn, kOff };
// Linear layers (constant 2-D weights): MKL's packed sgemm, ferry's own packed AVX2 GEMM, or oneDNN.
enum class CpuGemm { kAuto, kMkl, kOwn, kOnednn };

struct CpuOptions {
  CpuGemm gemm = CpuGemm::kAuto;
  Choice bf16 = Choice::kAuto;         // native bf16 Conv/MatMul for nodes the precision pass marks
  Choice winograd = Choice::kAuto;     // oneDNN's Winograd 3x3 kernels where measured faster
  Choice blocked_1x1 = Choice::kAuto;  // nChw16c jit_1x1 for 1x1 convs of streaming CNNs (AVX-512)
  Choice own_depthwise = Choice::kAuto;  // ferry's channels-last depthwise conv (auto: off, see depthwise_conv.cc)
  bool operator==(const CpuOptions&) const = default;
};

struct BackendOptions {
  int threads = 0;  // OpenMP threads for the cpu backend's kernels; 0 keeps the default (all cores)
  CpuOptions cpu;
};

const char* choice_name(Choice c);   // "auto", "on", "off"
const char* gemm_name(CpuGemm g);    // "auto", "mkl", "own", "onednn"
Result<Choice> parse_choice(const std::string& s, const std::string& what);
Result<CpuGemm> parse_gemm(const std::string& s);
// "gemm=auto bf16=auto winograd=auto blocked-1x1=auto own-depthwise=auto"; parse_cpu_options reads it back
// (the form stored in .ferry files; keys may come in any order, missing ones stay auto).
std::string to_string(const CpuOptions& o);
Result<CpuOptions> parse_cpu_options(const std::string& s);

}  // namespace ferry::backends
