// Gather of one constant index (`x[i]` along an axis), any element type. The result is a block of the
// input: with every dim before the axis 1 (always so on axis 0) that block is contiguous, and the output
// is a view of the input's bytes, no copy. Swin's attention splits its fused q/k/v projection this way
// after the head transpose (`qkv[0], qkv[1], qkv[2]`: 36-72 Gathers per model, which the reference
// kernel copied on one thread). With dims of more than 1 before the axis, the blocks (one per outer
// index) are copied by OpenMP threads. Several indices, indices computed at run time, and an index out
// of range (the reference reports it) run the reference kernel.
#include <cstring>
#include <memory>
#include <optional>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

// The constant single index of a Gather (indices of rank 0 or [1]), unnormalized.
std::optional<int64_t> constant_index(const ir::Node& n) {
  if (!n.has_input(1) || !n.inputs[1]->is_constant()) return std::nullopt;
  const Tensor& t = n.inputs[1]->initializer;
  if ((t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) || t.numel() != 1 || t.rank() > 1) return std::nullopt;
  return t.as_int64(0);
}

bool gather_supports(const ir::Node& n, const CpuOptions& o) {
  (void)o;
  if (!n.has_input(0) || !n.has_output(0) || !constant_index(n)) return false;
  return n.inputs[0]->dtype != DType::kUndefined;
}

// Whether the dims before `axis` are statically all 1, so that every index's block is contiguous.
bool static_single_outer(const ir::Node& n) {
  const auto& s = n.inputs[0]->shape;
  if (!s || s->empty()) return false;
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(s->size());
  if (axis < 0 || axis >= static_cast<int64_t>(s->size())) return false;
  for (int64_t d = 0; d < axis; ++d)
    if ((*s)[d].value != 1) return false;
  return true;
}

class GatherKernel : public Kernel {
 public:
  GatherKernel(const ir::Node& node, const ops::OpSchema& reference)
      : node_(node), reference_(reference), index_(*constant_index(node)),
        index_is_scalar_(node.inputs[1]->initializer.rank() == 0), view_(static_single_outer(node)) {}
  std::string name() const override { return view_ ? "cpu:view:gather" : "cpu:copy:gather"; }
  // Promised only where the shapes say the block is contiguous: a planned output that turned out a view
  // would leave its slot unused, and a promised view that had to copy would allocate on every run.
  bool may_view_input(int output) const override { return output == 0 && view_; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "data"));
    if (x->rank() == 0) return run_reference_on_plain(reference_, node_, ctx);
    int64_t axis = node_.attr_int("axis", 0);
    if (axis < 0) axis += x->rank();
    if (axis < 0 || axis >= x->rank()) return run_reference_on_plain(reference_, node_, ctx);
    const std::vector<int64_t>& d = x->dims();
    const int64_t i = index_ < 0 ? index_ + d[axis] : index_;
    if (i < 0 || i >= d[axis]) return run_reference_on_plain(reference_, node_, ctx);  // its error names the index
    std::vector<int64_t> out_dims(d.begin(), d.begin() + axis);
    if (!index_is_scalar_) out_dims.push_back(1);
    out_dims.insert(out_dims.end(), d.begin() + axis + 1, d.end());
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= d[k];
    for (int64_t k = axis + 1; k < x->rank(); ++k) inner *= d[k];
    const size_t es = dtype_size(x->dtype());
    const size_t run = static_cast<size_t>(inner) * es;
    const auto* src = static_cast<const char*>(x->raw()) + i * run;
    if (outer == 1 && view_) {
      // The block's bytes, kept alive by a handle on the input tensor (and so on its storage).
      auto input = std::make_shared<Tensor>(*x);
      ctx.set_output(0, Tensor::wrap(x->dtype(), std::move(out_dims), const_cast<char*>(src), std::move(input)));
      return Status();
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output_uninit(0, x->dtype(), std::move(out_dims)));
    auto* dst = static_cast<char*>(out->raw());
    const size_t src_stride = static_cast<size_t>(d[axis]) * run;
#pragma omp parallel for schedule(static) if (outer * inner >= kSmallElementwise)
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * run, src + o * src_stride, run);
    return Status();
  }

 private:
  const ir::Node& node_;
  const ops::OpSchema& reference_;
  const int64_t index_;
  const bool index_is_scalar_;  // rank-0 indices drop the axis; [1] keeps it as 1
  const bool view_;
};

Result<std::unique_ptr<Kernel>> create_gather(const ir::Node& node, const CpuOptions&) {
  FERRY_ASSIGN_OR_RETURN(const ops::OpSchema* reference, reference_kernel_of(node));
  return std::unique_ptr<Kernel>(std::make_unique<GatherKernel>(node, *reference));
}

}  // namespace

void register_gather(KernelTable& t) { t.push_back({"", "Gather", gather_supports, create_gather}); }

}  // namespace ferry::backends::cpu
