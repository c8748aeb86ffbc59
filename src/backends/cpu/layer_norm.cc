// LayerNormalization (opset 17) on oneDNN layer_normalization (fp32): the trailing axes [axis, rank)
// are viewed as one dim of prod(dims[axis:]) elements (same bytes), Scale and B as vectors of that
// length. Only the Y output is covered (Mean / InvStdDev wanted: the reference kernel runs the node),
// and only Scale / B that hold the whole normalized shape (a broadcast Scale runs on the reference).
#include <memory>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/shape_prepared_kernel.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

bool layer_norm_supports(const ir::Node& n, const CpuOptions& o) {
  if (!n.has_input(0) || !n.has_input(1) || !n.has_output(0)) return false;
  if (n.has_output(1) || n.has_output(2)) return false;
  for (int i = 0; i < 3; ++i)
    if (n.has_input(i) && n.inputs[i]->dtype != DType::kFloat32) return false;
  return n.outputs[0]->dtype == DType::kFloat32;
}

class LayerNormKernel : public ShapePreparedKernel {
 public:
  explicit LayerNormKernel(const ir::Node& node) : ShapePreparedKernel(node) {}
  std::string name() const override { return "cpu:onednn:layer_norm"; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* scale, ops::nn::tensor_in(ctx, 1, "Scale"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* bias, ops::nn::optional_tensor_in(ctx, 2, "B"));
    if (x->dtype() != DType::kFloat32 || scale->dtype() != DType::kFloat32 || (bias && bias->dtype() != DType::kFloat32))
      return run_reference(ctx);
    if (!ready_for(x->dims())) return run_reference(ctx);
    // Scale / B must hold exactly the normalized shape's elements (trailing dims equal, unit dims ahead).
    auto covers = [&](const Tensor& t) {
      if (t.numel() != inner_ || t.rank() > x->rank()) return false;
      for (int i = 1; i <= t.rank(); ++i)
        if (t.dim(-i) != x->dim(-i)) return false;
      return true;
    };
    if (!covers(*scale) || (bias && !covers(*bias))) return run_reference(ctx);
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, x->dims()));
    const md vec = plain_desc(DType::kFloat32, {inner_});
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, as_memory(*x, md_)},
                                               {DNNL_ARG_DST, as_memory(*y, md_)},
                                               {DNNL_ARG_SCALE, as_memory(*scale, vec)}};
    if (bias) args.emplace(DNNL_ARG_SHIFT, as_memory(*bias, vec));
    (bias ? prim_shift_ : prim_).execute(stream(), args);
    stream().wait();
    return Status();
  }

 private:
  bool prepare_for(const std::vector<int64_t>& d) override {
    const int64_t rank = static_cast<int64_t>(d.size());
    int64_t axis = node_.attr_int("axis", -1);
    if (axis < 0) axis += rank;
    if (rank == 0 || axis < 0 || axis >= rank) return false;
    int64_t outer = 1;
    inner_ = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner_) *= d[i];
    if (outer == 0 || inner_ == 0) return false;
    const float eps = node_.attr_float("epsilon", 1e-5f);
    try {
      md_ = plain_desc(DType::kFloat32, {outer, inner_});
      using flags = dnnl::normalization_flags;
      auto make = [&](flags f) {
        dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, md_, eps, f);
        return dnnl::layer_normalization_forward(dnnl::layer_normalization_forward::primitive_desc(desc, engine()));
      };
      prim_ = make(flags::use_scale);
      prim_shift_ = make(flags::use_scale | flags::use_shift);
    } catch (const dnnl::error&) {
      return false;
    }
    return true;
  }

  int64_t inner_ = 1;
  md md_;
  dnnl::layer_normalization_forward prim_, prim_shift_;
};

Result<std::unique_ptr<Kernel>> create_layer_norm(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<LayerNormKernel>(node);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_layer_norm(KernelTable& t) {
  t.push_back({"", "LayerNormalization", layer_norm_supports, create_layer_norm});
}

}  // namespace ferry::backends::cpu
