// Inference BatchNormalization on oneDNN (fp32, global statistics), in the layout the input arrives
// in: the ones the passes could not fold into a convolution.
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using nf = dnnl::normalization_flags;

bool bn_supports(const ir::Node& n, const CpuOptions& o) {
  if (n.num_inputs() != 5) return false;
  for (int i = 0; i < 5; ++i)
    if (!n.has_input(i) || n.inputs[i]->dtype != DType::kFloat32) return false;
  for (int i = 1; i < n.num_outputs(); ++i)
    if (n.has_output(i)) return false;  // running mean/var outputs: training only
  if (n.attr_int("training_mode", 0) != 0) return false;
  if (n.opset < 9 && n.attr_int("spatial", 1) != 1) return false;
  const auto& s = n.inputs[0]->shape;
  return s && s->size() >= 2 && s->size() <= 5;
}

class BatchNormKernel : public Kernel {
 public:
  BatchNormKernel(const ir::Node& node, bool blocked_out) : node_(node), blocked_out_(blocked_out) {}
  std::string name() const override { return "cpu:onednn:batch_normalization"; }
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    if (x->dtype() != DType::kFloat32 || x->rank() < 2 || x->rank() > 5)
      return Status::invalid(op + ": the cpu kernel takes float32 X of rank 2 to 5, got " + x->describe());
    const int64_t c = x->dim(1);
    const Tensor* params[4];
    const char* names[4] = {"scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 4; ++i) {
      FERRY_ASSIGN_OR_RETURN(params[i], ops::nn::tensor_in(ctx, i + 1, names[i]));
      if (params[i]->dtype() != DType::kFloat32 || params[i]->numel() != c || !params[i]->is_plain())
        return Status::invalid(op + ": " + names[i] + " must hold " + std::to_string(c) + " float32 values, got " +
                               params[i]->describe());
    }
    const md src = desc_of(*x);
    if (!pd_ || !(src_ == src)) {
      try {
        dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src,
                                                  node_.attr_float("epsilon", 1e-5f),
                                                  nf::use_global_stats | nf::use_scale | nf::use_shift);
        pd_ = dnnl::batch_normalization_forward::primitive_desc(d, engine());
        prim_ = dnnl::batch_normalization_forward(pd_);
        src_ = src;
      } catch (const dnnl::error& e) {
        return Status::unsupported(op + ": oneDNN batch normalization failed for " + x->describe() + ": " + e.what());
      }
    }
    const md vec({c}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, x->dims(), pd_.dst_desc(), blocked_out_));
    if (x->numel() > 0) {
      SerialIfSmall serial(x->numel() < kSmallElementwise);
      prim_.execute(stream(), {{DNNL_ARG_SRC, as_memory(*x, src)},
                               {DNNL_ARG_SCALE, as_memory(*params[0], vec)},
                               {DNNL_ARG_SHIFT, as_memory(*params[1], vec)},
                               {DNNL_ARG_MEAN, as_memory(*params[2], vec)},
                               {DNNL_ARG_VARIANCE, as_memory(*params[3], vec)},
                               {DNNL_ARG_DST, as_memory(dst, pd_.dst_desc())}});
      stream().wait();
    }
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  const ir::Node& node_;
  bool blocked_out_;
  md src_;
  dnnl::batch_normalization_forward::primitive_desc pd_;
  dnnl::batch_normalization_forward prim_;
};

Result<std::unique_ptr<Kernel>> create_bn(const ir::Node& node, const CpuOptions& o) {
  return std::unique_ptr<Kernel>(new BatchNormKernel(node, may_produce_blocked(*node.outputs[0])));
}

}  // namespace

void register_batch_norm(KernelTable& t) {
  t.push_back({"", "BatchNormalization", bn_supports, create_bn});
  declare_layout_aware("", "BatchNormalization");
}

}  // namespace ferry::backends::cpu
