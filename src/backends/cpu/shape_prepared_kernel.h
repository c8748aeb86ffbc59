// The common shape of the cpu kernels that prepare a oneDNN primitive per input shape and leave what
// they do not cover (other dtypes, empty tensors, attribute values oneDNN rejects) to the op's
// reference kernel, which also words the errors as the op does: Softmax, Transpose, LayerNormalization.
#pragma once
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/layout.h"
#include "core/shape.h"
#include "ops/op.h"

namespace ferry::backends::cpu {

class ShapePreparedKernel : public Kernel {
 public:
  // Finds the reference kernel; prepares right away when input 0's shape is static, so a static graph's
  // runs only execute.
  Status init() {
    FERRY_ASSIGN_OR_RETURN(reference_, reference_kernel_of(node_));
    const ir::Value* x = node_.inputs[0];
    if (x->shape && is_static(*x->shape)) (void)ready_for(static_dims(*x->shape));
    return Status();
  }

 protected:
  explicit ShapePreparedKernel(const ir::Node& node) : node_(node) {}
  // Builds the primitive(s) for input dims `d`; false when this kernel does not cover them.
  virtual bool prepare_for(const std::vector<int64_t>& d) = 0;
  // Whether the kernel is prepared for `d`, preparing when the dims changed since the last run.
  bool ready_for(const std::vector<int64_t>& d) {
    if (d != dims_ || !ready_) {
      dims_ = d;
      ready_ = prepare_for(d);
    }
    return ready_;
  }
  Status run_reference(ops::KernelContext& ctx) const { return reference_->kernel(ctx); }
  // The same for a kernel that accepts layouts: blocked inputs made plain first (layout.h).
  Status run_reference_on_plain(ops::KernelContext& ctx) const {
    return cpu::run_reference_on_plain(*reference_, node_, ctx);
  }

  const ir::Node& node_;

 private:
  const ops::OpSchema* reference_ = nullptr;
  std::vector<int64_t> dims_;
  bool ready_ = false;
};

// Float32 input 0 and output 0 of known rank 1..12 (or unknown rank): what Softmax and Transpose take.
inline bool float32_data_supports(const ir::Node& n, const CpuOptions& o) {
  if (!n.has_input(0) || !n.has_output(0)) return false;
  if (n.inputs[0]->dtype != DType::kFloat32 || n.outputs[0]->dtype != DType::kFloat32) return false;
  return !n.inputs[0]->shape || (!n.inputs[0]->shape->empty() && n.inputs[0]->shape->size() <= 12);
}

}  // namespace ferry::backends::cpu
