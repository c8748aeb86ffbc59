// The CPU backend: oneDNN primitives for convolution, matmul/gemm, pooling, normalization, softmax,
// eltwise and binary ops (with post-op fusion and blocked layouts kept between its own kernels), and
// vectorized kernels for the rest it covers. Nodes it does not cover run their reference kernel.
//
// Kernel files in this folder register themselves in cpu_backend.cc's table: add the file's stem to
// FERRY_CPU_KERNEL_FILES there (one list: it declares and calls register_<stem>).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "backends/backend.h"
#include "backends/backend_options.h"

namespace ferry::backends::cpu {

// One engine and stream for the process (oneDNN CPU engine; threads come from OpenMP).
dnnl::engine& engine();
dnnl::stream& stream();

// One entry per (domain, op_type) the backend covers. `supports` says whether this node (attributes,
// dtypes, static shapes…) is covered with these options; `create` prepares the kernel (primitives,
// prepacked weights), keeping what it needs of the options.
struct KernelEntry {
  std::string domain;  // "" = ONNX default domain
  std::string op_type;
  std::function<bool(const ir::Node&, const CpuOptions&)> supports;
  std::function<Result<std::unique_ptr<Kernel>>(const ir::Node&, const CpuOptions&)> create;
};
using KernelTable = std::vector<KernelEntry>;

// Whether a node the precision pass marked `ferry_precision="bfloat16"` (Conv, MatMul, Gemm and their
// fused forms) runs natively in bf16: choose_bf16 (kernel_choices.h: AMX, or avx512_bf16 whose dot
// products measured at least the fp32 FMA rate; --cpu-bf16 on/off override). Otherwise such nodes
// compute in fp32 on the bf16-rounded values (same rounding); the accumulation is fp32 either way.
bool wants_native_bf16(const ir::Node& node, const CpuOptions& o);

}  // namespace ferry::backends::cpu
