// Short measurements of this CPU that choices and reports rest on.
//
// bf16: whether Conv/MatMul nodes marked for bf16 compute natively in bf16 on this CPU, and why.
//
// avx512_bf16 alone does not make bf16 faster: on a Xeon whose AMX the hypervisor hides, one
// vdpbf16ps does 64 flops at half the rate of two 32-flop FMAs, and oneDNN's bf16 brgemm ran resnet50
// 1.7x slower than fp32 (40 against 23 ms); on CPUs with full-rate bf16 dot products (Zen 4, Cooper
// Lake) or AMX it is about 2x faster. So: AMX means native; avx512_bf16 without AMX means native only
// where a short throughput probe (about a millisecond, once per process) finds the dot product
// delivering at least the FMA rate in flops. --cpu-bf16 off / on override the choice (on only where
// the ISA has bf16); kernel_choices.h makes it.
#pragma once
#include <string>

#include <dnnl.hpp>

namespace ferry::backends::cpu {

// Whether oneDNN dispatches to `want` or an ISA above it on this CPU (DNNL_MAX_CPU_ISA included).
bool isa_has(dnnl::cpu_isa want);

// One-thread flop rate of 512-bit bf16 dot products over that of fp32 FMAs, best of a few rounds.
// Only call where the CPU has avx512_bf16.
double measure_bf16_dot_vs_fma();

// The fp32 FMA peak of `threads` threads running FMAs of the widest vector the kernels use at once
// (512-bit with AVX-512, else 256-bit; GFLOP/s, 2 flops per multiply-add, best round per thread),
// about 5 ms; 0 without AVX2. `ferry doctor` reports it and the
// benchmark harness rates GFLOP/s against it.
double measure_fp32_peak_gflops(int threads);

}  // namespace ferry::backends::cpu
