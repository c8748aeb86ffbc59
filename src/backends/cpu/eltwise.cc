// Standalone activations and unary math on oneDNN eltwise (fp32), in whatever layout the input has,
// so an unfused Relu between two convolutions does not force the tensor back to plain.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using alg = dnnl::algorithm;

struct EltwiseOp {
  alg a;
  float alpha = 0, beta = 0;
};

// A scalar float known at load time: an initializer or the output of a Constant node (exports often
// carry Clip's bounds that way before constant folding).
const Tensor* constant_scalar(const ir::Value* v) {
  const Tensor* t = nullptr;
  if (v->is_constant()) t = &v->initializer;
  else if (v->producer && v->producer->op_type == "Constant" && v->producer->domain.empty()) t = v->producer->attr_tensor("value");
  if (!t || t->numel() != 1 || t->dtype() != DType::kFloat32 || !t->is_plain()) return nullptr;
  return t;
}

// Clip's bounds: attributes before opset 11, constant inputs 1 and 2 after (absent = unbounded).
std::optional<EltwiseOp> clip_op(const ir::Node& n) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (n.opset < 11) {
    lo = n.attr_float("min", lo);
    hi = n.attr_float("max", hi);
  } else {
    for (int i : {1, 2}) {
      if (!n.has_input(i)) continue;
      const Tensor* t = constant_scalar(n.inputs[i]);
      if (!t) return std::nullopt;
      (i == 1 ? lo : hi) = t->data<float>()[0];
    }
  }
  return EltwiseOp{alg::eltwise_clip, lo, hi};
}

// The oneDNN eltwise for this node, nullopt when there is none.
std::optional<EltwiseOp> eltwise_for(const ir::Node& n) {
  const std::string& op = n.op_type;
  if (op == "Relu") return EltwiseOp{alg::eltwise_relu};
  if (op == "LeakyRelu") return EltwiseOp{alg::eltwise_relu, n.attr_float("alpha", 0.01f)};
  if (op == "Sigmoid") return EltwiseOp{alg::eltwise_logistic};
  if (op == "Tanh") return EltwiseOp{alg::eltwise_tanh};
  if (op == "Clip") return clip_op(n);
  if (op == "HardSwish") return EltwiseOp{alg::eltwise_hardswish};
  if (op == "Elu") return EltwiseOp{alg::eltwise_elu, n.attr_float("alpha", 1.f)};
  if (op == "Gelu") {
    const std::string approx = n.attr_string("approximate", "none");
    if (approx == "none") return EltwiseOp{alg::eltwise_gelu_erf};
    if (approx == "tanh") return EltwiseOp{alg::eltwise_gelu_tanh};
    return std::nullopt;
  }
  if (op == "Abs") return EltwiseOp{alg::eltwise_abs};
  if (op == "Sqrt") return EltwiseOp{alg::eltwise_sqrt};
  if (op == "Exp") return EltwiseOp{alg::eltwise_exp};
  if (op == "Mish") return EltwiseOp{alg::eltwise_mish};
  if (op == "Neg") return EltwiseOp{alg::eltwise_linear, -1.f, 0.f};
  return std::nullopt;
}

const char* const kEltwiseOps[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSwish", "Elu", "Gelu",
                                   "Abs",  "Sqrt",      "Exp",     "Mish", "Neg"};
// Not here: Log and Softplus, whose oneDNN approximations are off by ~1e-6 absolute near log(1) and
// for very negative inputs, more than the ONNX conformance tolerances allow.

bool eltwise_supports(const ir::Node& n, const CpuOptions& o) {
  if (!n.has_input(0) || n.inputs[0]->dtype != DType::kFloat32) return false;
  if (!n.has_output(0) || n.outputs[0]->dtype != DType::kFloat32) return false;
  if (n.inputs[0]->shape && (n.inputs[0]->shape->empty() || n.inputs[0]->shape->size() > 12)) return false;
  return eltwise_for(n).has_value();
}

class EltwiseKernel : public Kernel {
 public:
  EltwiseKernel(const ir::Node& node, EltwiseOp op, bool blocked_out) : node_(node), op_(op), blocked_out_(blocked_out) {}
  std::string name() const override { return "cpu:onednn:eltwise"; }
  bool accepts_layouts() const override { return true; }
  // oneDNN eltwise runs in place (src == dst); a plain output comes from allocate_output_uninit.
  int inplace_input(int output) const override { return output == 0 ? 0 : -1; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    if (x->dtype() != DType::kFloat32) return Status::invalid(node_.op_type + ": the cpu kernel takes float32");
    if (x->rank() == 0 || x->rank() > 12) return Status::invalid(node_.op_type + ": the cpu kernel takes ranks 1 to 12");
    const md src = desc_of(*x);
    if (!pd_ || !(src_ == src)) {
      try {
        dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, op_.a, src, op_.alpha, op_.beta);
        pd_ = dnnl::eltwise_forward::primitive_desc(d, engine());
        prim_ = dnnl::eltwise_forward(pd_);
        src_ = src;
        dst_md_ = pd_.dst_desc();
        src_m_ = BoundMemory();
        dst_m_ = BoundMemory();
      } catch (const dnnl::error& e) {
        return Status::unsupported(node_.op_type + ": oneDNN eltwise failed for " + x->describe() + ": " + e.what());
      }
    }
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, x->dims(), dst_md_, blocked_out_));
    if (x->numel() > 0) {
      SerialIfSmall serial(x->numel() < kSmallElementwise);
      args_[DNNL_ARG_SRC] = src_m_.bind(src_, *x);
      args_[DNNL_ARG_DST] = dst_m_.bind(dst_md_, dst);
      prim_.execute(stream(), args_);
      stream().wait();
    }
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  const ir::Node& node_;
  EltwiseOp op_;
  bool blocked_out_;
  md src_, dst_md_;
  dnnl::eltwise_forward::primitive_desc pd_;
  dnnl::eltwise_forward prim_;
  BoundMemory src_m_, dst_m_;  // rebound per run (layout.h)
  std::unordered_map<int, dnnl::memory> args_;
};

Result<std::unique_ptr<Kernel>> create_eltwise(const ir::Node& node, const CpuOptions& o) {
  auto op = eltwise_for(node);
  if (!op) return Status::unsupported("the cpu backend has no eltwise kernel for " + node.label());
  const bool blocked = may_produce_blocked(*node.outputs[0]);
  return std::unique_ptr<Kernel>(new EltwiseKernel(node, *op, blocked));
}

}  // namespace

void register_eltwise(KernelTable& t) {
  for (const char* op : kEltwiseOps) {
    t.push_back({"", op, eltwise_supports, create_eltwise});
    declare_layout_aware("", op);
  }
}

}  // namespace ferry::backends::cpu
