// The CPU backend: oneDNN primitives for convolution, matmul/gemm, pooling, normalization, softmax,
// eltwise and binary ops (with post-op fusion and blocked layouts kept between its own kernels), and
// vectorized kernels for the rest it covers. Nodes it does not cover run their reference kernel.
//
// Kernel files in this folder register themselves in cpu_backend.cc's table (one register_* call each).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "backends/backend.h"

namespace ferry::backends::cpu {

// One engine and stream for the process (oneDNN CPU engine; threads come from OpenMP).
dnnl::engine& engine();
dnnl::stream& stream();

// One entry per (domain, op_type) the backend covers. `supports` says whether this node (attributes,
// dtypes, static shapes…) is covered; `create` prepares the kernel (primitives, prepacked weights).
struct KernelEntry {
  std::string domain;  // "" = ONNX default domain
  std::string op_type;
  std::function<bool(const ir::Node&)> supports;
  std::function<Result<std::unique_ptr<Kernel>>(const ir::Node&)> create;
};
using KernelTable = std::vector<KernelEntry>;

// Whether a node the precision pass marked `ferry_precision="bfloat16"` (Conv, MatMul, Gemm and their
// fused forms) runs natively in bf16: bf16_choice() (isa_probe.h: AMX, or avx512_bf16 whose dot
// products measured at least the fp32 FMA rate; FERRY_CPU_BF16=0/1 override). Otherwise such nodes
// compute in fp32 on the bf16-rounded values (same rounding); the accumulation is fp32 either way.
bool native_bf16_available();
// native_bf16_available() and the node asks for it.
bool wants_native_bf16(const ir::Node& node);

// Sets the number of threads oneDNN and the vectorized kernels use (OpenMP); <= 0 keeps the default.
void set_num_threads(int n);

}  // namespace ferry::backends::cpu
