// Softmax and LogSoftmax on oneDNN softmax / logsoftmax (fp32, plain layout), prepared per shape.
// From opset 13 the op runs along one axis (any axis: oneDNN takes strided inner dims); before 13
// the input is coerced to 2-D at `axis` and each row of prod(dims[axis:]) elements is normalized,
// which is a softmax over axis 1 of a [outer, inner] view of the same bytes.
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

bool softmax_supports(const ir::Node& n) {
  if (!n.has_input(0) || !n.has_output(0)) return false;
  if (n.inputs[0]->dtype != DType::kFloat32 || n.outputs[0]->dtype != DType::kFloat32) return false;
  return !n.inputs[0]->shape || (!n.inputs[0]->shape->empty() && n.inputs[0]->shape->size() <= 12);
}

class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(const ir::Node& node, bool log) : node_(node), log_(log) {}
  std::string name() const override { return log_ ? "cpu:onednn:logsoftmax" : "cpu:onednn:softmax"; }

  Status init() {
    reference_ = ops::OpRegistry::global().find(node_.domain, node_.op_type, node_.opset);
    if (!reference_) return Status::unsupported(node_.label() + ": no reference kernel to fall back on");
    const ir::Value* x = node_.inputs[0];
    if (x->shape && is_static(*x->shape)) (void)prepare(static_dims(*x->shape));
    return Status();
  }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "input"));
    if (x->dtype() != DType::kFloat32 || x->rank() == 0 || x->numel() == 0) return reference_->kernel(ctx);
    if (x->dims() != dims_ || !ready_) {
      if (!prepare(x->dims())) return reference_->kernel(ctx);  // bad axis: the reference reports it
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, x->dims()));
    if (log_) {
      log_prim_.execute(stream(), {{DNNL_ARG_SRC, as_memory(*x, md_)}, {DNNL_ARG_DST, as_memory(*y, md_)}});
    } else {
      prim_.execute(stream(), {{DNNL_ARG_SRC, as_memory(*x, md_)}, {DNNL_ARG_DST, as_memory(*y, md_)}});
    }
    stream().wait();
    return Status();
  }

 private:
  // Prepares the primitive for input dims `d`; false when the axis is out of range or oneDNN fails.
  bool prepare(const std::vector<int64_t>& d) {
    ready_ = false;
    dims_ = d;
    const int64_t rank = static_cast<int64_t>(d.size());
    if (rank == 0) return false;
    for (int64_t v : d)
      if (v == 0) return false;
    std::vector<int64_t> view;
    int axis = 0;
    if (node_.opset < 13) {
      int64_t a = node_.attr_int("axis", 1);
      if (a < 0) a += rank;
      if (a < 0 || a > rank) return false;
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < rank; ++i) (i < a ? outer : inner) *= d[i];
      view = {outer, inner};
      axis = 1;
    } else {
      int64_t a = node_.attr_int("axis", -1);
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return false;
      view = d;
      axis = static_cast<int>(a);
    }
    try {
      md_ = plain_desc(DType::kFloat32, view);
      if (log_) {
        dnnl::logsoftmax_forward::desc desc(dnnl::prop_kind::forward_inference, md_, axis);
        log_prim_ = dnnl::logsoftmax_forward(dnnl::logsoftmax_forward::primitive_desc(desc, engine()));
      } else {
        dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md_, axis);
        prim_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(desc, engine()));
      }
    } catch (const dnnl::error&) {
      return false;
    }
    ready_ = true;
    return true;
  }

  const ir::Node& node_;
  bool log_;
  const ops::OpSchema* reference_ = nullptr;
  std::vector<int64_t> dims_;
  bool ready_ = false;
  md md_;
  dnnl::softmax_forward prim_;
  dnnl::logsoftmax_forward log_prim_;
};

Result<std::unique_ptr<Kernel>> create_softmax(const ir::Node& node) {
  auto k = std::make_unique<SoftmaxKernel>(node, node.op_type == "LogSoftmax");
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_softmax(KernelTable& t) {
  t.push_back({"", "Softmax", softmax_supports, create_softmax});
  t.push_back({"", "LogSoftmax", softmax_supports, create_softmax});
}

}  // namespace ferry::backends::cpu
