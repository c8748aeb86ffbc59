// Concat (float32) on oneDNN's concat primitive, in the layout its inputs arrive in: a DenseNet's growing
// feature concatenations stay in the convolutions' blocked layout, instead of a reorder of every input to
// plain, a plain copy, and a reorder back in the next convolution, every layer. Inputs in another layout
// than the first are brought to the first's; the result keeps that layout when every reader is a
// layout-aware cpu kernel, and is plain otherwise. Empty inputs are skipped (oneDNN has no zero dims).
#include <memory>
#include <unordered_map>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

bool concat_supports(const ir::Node& n, const CpuOptions&) {
  if (!n.domain.empty() || n.num_inputs() < 1 || !n.has_output(0) || n.outputs[0]->dtype != DType::kFloat32) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i) || n.inputs[i]->dtype != DType::kFloat32 || !n.inputs[i]->shape) return false;
    const size_t r = n.inputs[i]->shape->size();
    if (r < 1 || r > 6) return false;
  }
  return true;
}

class ConcatKernel : public Kernel {
 public:
  ConcatKernel(const ir::Node& node, bool blocked_out) : node_(node), blocked_out_(blocked_out) {}
  std::string name() const override { return impl_.empty() ? "cpu:onednn:concat" : "cpu:onednn:concat:" + impl_; }
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    std::vector<const Tensor*> ins;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      FERRY_ASSIGN_OR_RETURN(const Tensor* t, ops::nn::tensor_in(ctx, i, "inputs"));
      if (t->dtype() != DType::kFloat32) return Status::invalid(op + ": the cpu kernel takes float32 inputs");
      ins.push_back(t);
    }
    const int rank = ins[0]->rank();
    FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node_.attr_int("axis", 0), rank));
    std::vector<int64_t> out_dims = ins[0]->dims();
    out_dims[axis] = 0;
    for (const Tensor* t : ins) {
      if (t->rank() != rank) return Status::invalid(op + ": inputs of different ranks: " + ins[0]->describe() + ", " + t->describe());
      for (int d = 0; d < rank; ++d)
        if (d != axis && t->dim(d) != ins[0]->dim(d))
          return Status::invalid(op + ": inputs differ outside axis " + std::to_string(axis) + ": " + ins[0]->describe() +
                                 ", " + t->describe());
      out_dims[axis] += t->dim(static_cast<int>(axis));
    }
    // The inputs oneDNN sees: non-empty ones, in the first non-empty input's layout.
    std::vector<Tensor> parts;
    for (const Tensor* t : ins)
      if (t->numel() > 0) parts.push_back(*t);
    if (parts.empty()) {
      FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_dims));
      (void)y;
      return Status();
    }
    // One layout for all: the first input's when every input has it, else plain.
    md first = desc_of(parts[0]);
    bool same = true;
    for (const Tensor& t : parts) same = same && describe_desc(desc_of(t)) == describe_desc(first);
    if (!same) {
      for (Tensor& t : parts) { FERRY_ASSIGN_OR_RETURN(t, t.plain()); }
      first = desc_of(parts[0]);
    }
    std::vector<md> srcs;
    for (const Tensor& t : parts) srcs.push_back(desc_of(t));
    if (!pd_ || srcs_ != srcs) {
      try {
        // Plain result unless every reader takes layouts: then oneDNN picks the sources' layout.
        if (blocked_out_ && !is_plain_desc(first)) {
          pd_ = dnnl::concat::primitive_desc(static_cast<int>(axis), srcs, engine());
        } else {
          pd_ = dnnl::concat::primitive_desc(plain_desc(DType::kFloat32, out_dims), static_cast<int>(axis), srcs, engine());
        }
        prim_ = dnnl::concat(pd_);
        impl_ = pd_.impl_info_str();
        srcs_ = srcs;
      } catch (const dnnl::error& e) {
        return Status::unsupported(op + ": oneDNN concat failed: " + e.what());
      }
    }
    const md dst = pd_.dst_desc();
    FERRY_ASSIGN_OR_RETURN(Tensor y, new_output(ctx, 0, DType::kFloat32, out_dims, dst, blocked_out_));
    std::unordered_map<int, dnnl::memory> args;
    for (size_t i = 0; i < parts.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = as_memory(parts[i], srcs[i]);
    args[DNNL_ARG_DST] = as_memory(y, dst);
    prim_.execute(stream(), args);
    stream().wait();
    return set_output(ctx, 0, std::move(y), blocked_out_);
  }

 private:
  const ir::Node& node_;
  bool blocked_out_;
  dnnl::concat::primitive_desc pd_;
  dnnl::concat prim_;
  std::vector<md> srcs_;
  std::string impl_;
};

Result<std::unique_ptr<Kernel>> create_concat(const ir::Node& node, const CpuOptions&) {
  return std::unique_ptr<Kernel>(new ConcatKernel(node, may_produce_blocked(*node.outputs[0])));
}

}  // namespace

void register_concat(KernelTable& t) {
  t.push_back({"", "Concat", concat_supports, create_concat});
  declare_layout_aware("", "Concat");
}

}  // namespace ferry::backends::cpu
