// A backend turns IR nodes into prepared kernels. The runtime asks the session's backend first and
// falls back to the reference backend (the oracle, always built) for nodes it does not support.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/backend_options.h"
#include "core/status.h"
#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::backends {

// A node's prepared kernel. Preparation (weight prepacking, primitive creation) happens once, in
// create_kernel; run() only executes.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status run(ops::KernelContext& ctx) = 0;
  virtual std::string name() const = 0;  // shown by `inspect --plan`, e.g. "reference"
  // Whether run() reads inputs in a non-plain TensorLayout (see core/tensor.h). When false, the
  // executor hands this kernel plain copies of such inputs.
  virtual bool accepts_layouts() const { return false; }
  // The input whose memory output `output` may take over (in place) when that input dies at this node,
  // or -1. The memory planner decides whether it does. Only for kernels that get that output with
  // ctx.allocate_output_uninit, write a plain tensor of the input's dtype and size, and read each input
  // element before writing the output element at the same index (elementwise ops).
  virtual int inplace_input(int output) const {
    (void)output;
    return -1;
  }
  // Whether output `output` may be a view of input 0's storage (the same bytes under other dims or
  // layout, as Reshape's is). The memory planner then gives that output no arena slot of its own and
  // keeps input 0's buffer until the view's last use, as for the aliasing ops.
  virtual bool may_view_input(int output) const {
    (void)output;
    return false;
  }
  // Called at prepare time for a constant input that this node alone reads. A kernel that keeps its
  // own prepacked copy of it may hand that copy back (with the initializer's dims and dtype, in a
  // layout whose to_plain() rebuilds the original) and drop its reference to the original, so the
  // session holds the weights once instead of twice; the runtime then stores the returned tensor as the
  // initializer. run() must accept it as that input. Undefined (the default): keep the original.
  virtual Tensor adopt_constant(int input) {
    (void)input;
    return Tensor();
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual bool supports(const ir::Node& node) const = 0;
  virtual Result<std::unique_ptr<Kernel>> create_kernel(const ir::Node& node) = 0;
  // Whether nodes the precision pass marks for bf16 compute natively in bf16 here, and why (reports
  // say "native" or "EMULATED" from this). The default: bf16 is emulated (fp32 on rounded values).
  virtual bool native_bf16(std::string* why) const {
    if (why) *why = "the " + name() + " backend computes bf16 nodes in fp32 on bf16-rounded values";
    return false;
  }
  // The kernel choices this backend made for this machine, one line each ("GEMM: own packed AVX2
  // (AVX2 CPU without AVX-512)"), for `ferry doctor` and reports; empty where it has no choices.
  virtual std::vector<std::string> kernel_choices() const { return {}; }
};

std::unique_ptr<Backend> make_reference_backend();
// oneDNN + vectorized kernels (backends/cpu/); applies options.threads (OpenMP is process-wide).
std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);
// By name ("reference", "cpu"); the error lists the available backends.
Result<std::unique_ptr<Backend>> make_backend(const std::string& name, const BackendOptions& options = {});

}  // namespace ferry::backends
