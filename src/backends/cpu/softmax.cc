// Softmax and LogSoftmax on oneDNN softmax / logsoftmax (fp32, plain layout), prepared per shape.
// From opset 13 the op runs along one axis (any axis: oneDNN takes strided inner dims); before 13
// the input is coerced to 2-D at `axis` and each row of prod(dims[axis:]) elements is normalized,
// which is a softmax over axis 1 of a [outer, inner] view of the same bytes. oneDNN 2.6 has only its
// reference implementation for a non-innermost axis; such axes run ferry's own kernel (vec_softmax.h).
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/shape_prepared_kernel.h"
#include "backends/cpu/vec_softmax.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

class SoftmaxKernel : public ShapePreparedKernel {
 public:
  SoftmaxKernel(const ir::Node& node, bool log) : ShapePreparedKernel(node), log_(log) {}
  std::string name() const override {
    if (strided_) return log_ ? "cpu:vec:logsoftmax_strided" : "cpu:vec:softmax_strided";
    return log_ ? "cpu:onednn:logsoftmax" : "cpu:onednn:softmax";
  }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "input"));
    if (x->dtype() != DType::kFloat32 || x->rank() == 0 || x->numel() == 0) return run_reference(ctx);
    if (!ready_for(x->dims())) return run_reference(ctx);  // bad axis: the reference reports it
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, x->dims()));
    if (strided_) {
      vec_softmax_strided(x->data<float>(), y->data<float>(), outer_, axis_len_, inner_, log_);
      return Status();
    }
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
  bool prepare_for(const std::vector<int64_t>& d) override {
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
    // A non-innermost axis: ferry's kernel over the [outer, axis, inner] view.
    outer_ = axis_len_ = inner_ = 1;
    for (int i = 0; i < static_cast<int>(view.size()); ++i) (i < axis ? outer_ : i == axis ? axis_len_ : inner_) *= view[i];
    strided_ = inner_ > 1;
    if (strided_) return true;
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
    return true;
  }

  bool log_;
  bool strided_ = false;  // a non-innermost axis: vec_softmax_strided over [outer_, axis_len_, inner_]
  int64_t outer_ = 1, axis_len_ = 1, inner_ = 1;
  md md_;
  dnnl::softmax_forward prim_;
  dnnl::logsoftmax_forward log_prim_;
};

Result<std::unique_ptr<Kernel>> create_softmax(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<SoftmaxKernel>(node, node.op_type == "LogSoftmax");
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_softmax(KernelTable& t) {
  t.push_back({"", "Softmax", float32_data_supports, create_softmax});
  t.push_back({"", "LogSoftmax", float32_data_supports, create_softmax});
}

}  // namespace ferry::backends::cpu
