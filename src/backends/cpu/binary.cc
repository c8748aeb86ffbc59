// Add, Sub, Mul, Div, Max, Min (two inputs) on oneDNN binary (fp32) with numpy broadcasting where
// the first operand has the output's shape (swapped for the commutative ops): residual adds between
// blocked convolution outputs, and squeeze-excite's [N,C,H,W] * [N,C,1,1], run without reorders.
// Where oneDNN would serve a shape with its reference implementation (2.6 does for SE-style
// broadcasts in plain NCHW: 0.03 GFLOP/s) or cannot broadcast (the first operand of Sub/Div), the
// operands are made plain and ferry's vectorized broadcast kernel runs instead (vec_binary.h).
#include <memory>
#include <optional>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "backends/cpu/vec_binary.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using alg = dnnl::algorithm;

std::optional<alg> binary_alg(const std::string& op) {
  if (op == "Add") return alg::binary_add;
  if (op == "Sub") return alg::binary_sub;
  if (op == "Mul") return alg::binary_mul;
  if (op == "Div") return alg::binary_div;
  if (op == "Max") return alg::binary_max;
  if (op == "Min") return alg::binary_min;
  return std::nullopt;
}

VecBinary vec_op(alg a) {
  switch (a) {
    case alg::binary_add: return VecBinary::kAdd;
    case alg::binary_sub: return VecBinary::kSub;
    case alg::binary_mul: return VecBinary::kMul;
    case alg::binary_div: return VecBinary::kDiv;
    case alg::binary_max: return VecBinary::kMax;
    default: return VecBinary::kMin;
  }
}

bool commutative(const std::string& op) { return op == "Add" || op == "Mul" || op == "Max" || op == "Min"; }

bool binary_supports(const ir::Node& n, const CpuOptions& o) {
  if (n.num_inputs() != 2 || !n.has_input(0) || !n.has_input(1) || !n.has_output(0)) return false;
  for (int i = 0; i < 2; ++i) {
    const ir::Value* v = n.inputs[i];
    if (v->dtype != DType::kFloat32 || !v->shape || v->shape->size() > 12) return false;
  }
  if (n.outputs[0]->dtype != DType::kFloat32) return false;
  return binary_alg(n.op_type).has_value();
}

// `t`'s descriptor with leading unit dims up to `rank` (plain tensors only; blocked ones already
// have the output's rank when they come from a convolution).
Result<md> desc_at_rank(const Tensor& t, int rank) {
  if (t.rank() == rank) return desc_of(t);
  if (!t.is_plain()) return Status::unsupported("a blocked operand of lower rank");
  std::vector<int64_t> d(rank - t.rank(), 1);
  d.insert(d.end(), t.dims().begin(), t.dims().end());
  return plain_desc(t.dtype(), d);
}

class BinaryKernel : public Kernel {
 public:
  BinaryKernel(const ir::Node& node, alg a, bool blocked_out) : node_(node), alg_(a), blocked_out_(blocked_out) {}
  // With the oneDNN implementation once a run chose it ("cpu:onednn:binary:jit:uni"), so profiles and
  // tests see which one runs.
  std::string name() const override {
    if (own_) return "cpu:vec:binary";
    return impl_.empty() ? "cpu:onednn:binary" : "cpu:onednn:binary:" + impl_;
  }
  bool accepts_layouts() const override { return true; }
  // oneDNN binary runs in place over its first operand (the one of the output's shape, which run()
  // puts first), so the output may take that operand's bytes where it dies here: squeeze-excite's
  // scaling then rewrites the tensor it just read instead of streaming a second one through the cache.
  int inplace_input(int output) const override {
    if (output != 0 || !node_.outputs[0]->shape || !is_static(*node_.outputs[0]->shape)) return -1;
    for (int i = 0; i < 2; ++i) {
      if (i == 1 && !commutative(node_.op_type)) break;
      if (node_.inputs[i]->shape && *node_.inputs[i]->shape == *node_.outputs[0]->shape) return i;
    }
    return -1;
  }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    FERRY_ASSIGN_OR_RETURN(const Tensor* a, ops::nn::tensor_in(ctx, 0, "A"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* b, ops::nn::tensor_in(ctx, 1, "B"));
    if (a->dtype() != DType::kFloat32 || b->dtype() != DType::kFloat32)
      return Status::invalid(op + ": the cpu kernel takes float32 inputs");
    FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, broadcast_dims(a->dims(), b->dims()));
    const Tensor* full = a;
    const Tensor* other = b;
    if (a->dims() != out_dims) {
      if (!commutative(op) || b->dims() != out_dims) return run_own(ctx, *a, *b);
      std::swap(full, other);
    }
    if (out_dims.empty() || out_dims.size() > 12) return run_own(ctx, *a, *b);
    const int rank = static_cast<int>(out_dims.size());
    const md src0 = desc_of(*full);
    Tensor other_t = *other;
    // Same shape, different layout: bring the second operand into the first's layout (oneDNN's fast
    // binary kernels want matching formats).
    if (other->dims() == out_dims && !(desc_of(*other) == src0)) {
      FERRY_ASSIGN_OR_RETURN(other_t, reorder_to(*other, src0));
    }
    auto src1 = desc_at_rank(other_t, rank);
    if (!src1.ok()) return run_own(ctx, *a, *b);
    if (!pd_ || !(src0_ == src0) || !(src1_ == *src1)) {
      try {
        dnnl::binary::desc d(alg_, src0, *src1, src0);
        pd_ = dnnl::binary::primitive_desc(d, engine());
        own_ = is_reference_impl(pd_);
        impl_ = pd_.impl_info_str();
        if (!own_) prim_ = dnnl::binary(pd_);
        src0_ = src0;
        src1_ = *src1;
        m0_ = BoundMemory();
        m1_ = BoundMemory();
        dst_m_ = BoundMemory();
      } catch (const dnnl::error& e) {
        return Status::unsupported(op + ": oneDNN binary failed for " + a->describe() + ", " + b->describe() + ": " + e.what());
      }
    }
    if (own_) return run_own(ctx, *a, *b);
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, out_dims, src0, blocked_out_));
    if (dst.numel() > 0) {
      SerialIfSmall serial(dst.numel() < kSmallElementwise);
      args_[DNNL_ARG_SRC_0] = m0_.bind(src0, *full);
      args_[DNNL_ARG_SRC_1] = m1_.bind(*src1, other_t);
      args_[DNNL_ARG_DST] = dst_m_.bind(src0, dst);
      prim_.execute(stream(), args_);
      stream().wait();
    }
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  // ferry's broadcast kernel on plain operands, in the node's operand order.
  Status run_own(ops::KernelContext& ctx, const Tensor& a, const Tensor& b) {
    FERRY_ASSIGN_OR_RETURN(Tensor pa, a.plain());
    FERRY_ASSIGN_OR_RETURN(Tensor pb, b.plain());
    FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, broadcast_dims(pa.dims(), pb.dims()));
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, out_dims, plain_desc(DType::kFloat32, out_dims)));
    vec_binary(vec_op(alg_), plan_broadcast(pa.dims(), pb.dims(), out_dims), pa.data<float>(), pb.data<float>(),
               dst.data<float>());
    return set_output(ctx, 0, std::move(dst), false);
  }

  const ir::Node& node_;
  alg alg_;
  bool blocked_out_;
  md src0_, src1_;
  dnnl::binary::primitive_desc pd_;
  dnnl::binary prim_;
  BoundMemory m0_, m1_, dst_m_;  // rebound per run (layout.h)
  bool own_ = false;  // oneDNN offered only its reference implementation for these descriptors
  std::string impl_;  // the implementation oneDNN chose
  std::unordered_map<int, dnnl::memory> args_;
};

Result<std::unique_ptr<Kernel>> create_binary(const ir::Node& node, const CpuOptions& o) {
  auto a = binary_alg(node.op_type);
  if (!a) return Status::unsupported("the cpu backend has no binary kernel for " + node.label());
  return std::unique_ptr<Kernel>(new BinaryKernel(node, *a, may_produce_blocked(*node.outputs[0])));
}

}  // namespace

void register_binary(KernelTable& t) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    t.push_back({"", op, binary_supports, create_binary});
    declare_layout_aware("", op);
  }
}

}  // namespace ferry::backends::cpu
