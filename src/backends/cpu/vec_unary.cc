// Float32 elementwise math the oneDNN eltwise primitives do not cover (or not accurately enough for
// the ONNX conformance tolerances: Log, Softplus), on the Highway/SLEEF kernels of vec_math.h with
// run-time ISA dispatch; large tensors are split across the OpenMP threads.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/vec_math.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

const std::map<std::string, VecUnary>& vec_ops() {
  static const std::map<std::string, VecUnary> m{
      {"Log", VecUnary::kLog},         {"Erf", VecUnary::kErf},           {"Sin", VecUnary::kSin},
      {"Cos", VecUnary::kCos},         {"Atan", VecUnary::kAtan},         {"Softplus", VecUnary::kSoftplus},
      {"Softsign", VecUnary::kSoftsign}, {"Reciprocal", VecUnary::kReciprocal}, {"Floor", VecUnary::kFloor},
      {"Ceil", VecUnary::kCeil},       {"Round", VecUnary::kRound}};
  return m;
}

// com.ferry RoundFloat's kernel follows its `to` attribute.
std::optional<VecUnary> round_kind(const ir::Node& n) {
  if (n.domain != "com.ferry" || n.op_type != "RoundFloat") return std::nullopt;
  const int64_t to = n.attr_int("to", 10);
  if (to == 10) return VecUnary::kRoundFp16;
  if (to == 16) return VecUnary::kRoundBf16;
  return std::nullopt;
}

bool vec_unary_supports(const ir::Node& n, const CpuOptions& o) {
  if (!round_kind(n) && (!n.domain.empty() || !vec_ops().count(n.op_type))) return false;
  return n.has_input(0) && n.inputs[0]->dtype == DType::kFloat32 && n.has_output(0) &&
         n.outputs[0]->dtype == DType::kFloat32;
}

// Below this many elements one thread does it all: forking costs more than it saves.
constexpr int64_t kChunk = 1 << 15;

class VecUnaryKernel : public Kernel {
 public:
  VecUnaryKernel(const ir::Node& node, VecUnary op, bool layouts, bool blocked_out, bool pass_on = false)
      : node_(node),
        op_(op),
        layouts_(layouts),
        blocked_out_(blocked_out),
        bf16_readers_(op == VecUnary::kRoundBf16 && blocked_out && readers_take_bf16_storage(*node.outputs[0])),
        pass_on_(pass_on) {}
  std::string name() const override { return "cpu:vec:" + vec_math_target(); }
  // RoundFloat maps 0 to 0, so it may run on a blocked tensor's padded storage as it is: a rounded
  // conv -> conv chain keeps oneDNN's layout.
  bool accepts_layouts() const override { return layouts_; }
  // Each element is read before the same element is written: the output may take the input's memory.
  int inplace_input(int output) const override { return output == 0 && !pass_on_ ? 0 : -1; }
  // A RoundFloat whose readers round by themselves hands its input on as it is.
  bool may_view_input(int output) const override { return output == 0 && pass_on_; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    if (x->dtype() != DType::kFloat32) return Status::invalid(node_.op_type + ": the cpu kernel takes float32");
    if (pass_on_) {
      ctx.set_output(0, *x);
      return Status();
    }
    if (stores_bf16(*x)) {
      // A native-bf16 conv's bf16 result: already rounded. Passed on as it is to convs, which read bf16;
      // for any other reader converted (exactly) to float32, blocked or plain as they take it.
      if (op_ != VecUnary::kRoundBf16) return Status::internal(node_.label() + ": a bf16 tensor reached " + node_.op_type);
      // The conversion goes to a tensor of its own: the planned output may share x's bytes (inplace_input),
      // and a reorder cannot run in place.
      if (bf16_readers_) return set_output(ctx, 0, *x, true);
      const dnnl::memory::desc f32 = blocked_out_ ? with_data_type(desc_of(*x), dnnl::memory::data_type::f32)
                                                  : plain_desc(DType::kFloat32, x->dims());
      FERRY_ASSIGN_OR_RETURN(Tensor y, reorder_to(*x, f32));
      return set_output(ctx, 0, std::move(y), blocked_out_);
    }
    if (!x->is_plain()) {
      const dnnl::memory::desc md = desc_of(*x);
      FERRY_ASSIGN_OR_RETURN(Tensor dst, make_tensor(DType::kFloat32, x->dims(), md));
      apply(x->data<float>(), dst.data<float>(), static_cast<int64_t>(md.get_size() / sizeof(float)));
      return set_output(ctx, 0, std::move(dst), blocked_out_);
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, x->dims()));
    apply(x->data<float>(), y->data<float>(), x->numel());
    return Status();
  }

 private:
  void apply(const float* in, float* out, int64_t n) const {
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    const VecUnary op = op_;
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t lo = c * kChunk, len = std::min(kChunk, n - lo);
      vec_unary(op, in + lo, out + lo, static_cast<size_t>(len));
    }
  }

  const ir::Node& node_;
  VecUnary op_;
  bool layouts_, blocked_out_;
  bool bf16_readers_;  // a bf16-stored input may go on as it is
  // RoundFloat(to=16) whose readers all convert to bf16 themselves (readers_convert_to_bf16): rounding
  // here would be a pass over the tensor that changes nothing they compute.
  bool pass_on_;
};

Result<std::unique_ptr<Kernel>> create_vec_unary(const ir::Node& node, const CpuOptions& o) {
  if (auto r = round_kind(node)) {
    const bool pass_on = *r == VecUnary::kRoundBf16 && readers_convert_to_bf16(*node.outputs[0], o);
    return std::unique_ptr<Kernel>(new VecUnaryKernel(node, *r, true, may_produce_blocked(*node.outputs[0]), pass_on));
  }
  auto it = vec_ops().find(node.op_type);
  if (it == vec_ops().end()) return Status::unsupported("the cpu backend has no vectorized kernel for " + node.label());
  return std::unique_ptr<Kernel>(new VecUnaryKernel(node, it->second, false, false));
}

}  // namespace

void register_vec_unary(KernelTable& t) {
  for (const auto& [op, kind] : vec_ops()) t.push_back({"", op, vec_unary_supports, create_vec_unary});
  t.push_back({"com.ferry", "RoundFloat", vec_unary_supports, create_vec_unary});
  declare_layout_aware("com.ferry", "RoundFloat");
}

}  // namespace ferry::backends::cpu
