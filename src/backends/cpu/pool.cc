// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on oneDNN pooling (fp32, 1-3 spatial
// dims), reading any oneDNN layout and keeping it for layout-aware consumers.
//
// Pooling has no `any` source format, so the primitive is made for the layout the input arrives in
// (normally the one the producing convolution picked) and cached by that descriptor.
//
// In bf16 mode a pooling whose input a native-bf16 conv stored in bf16 pools in bf16 when its own result
// is only rounded to bf16 (layout.h): the max, or the average accumulated in float32 and rounded once,
// is what the rounding after a float32 pooling gives. A max pooling (exact on bf16 values, so not
// rounded after) also does when its readers all take bf16 storage. Otherwise it converts the input to
// float32 first.
//
// GlobalAveragePool on nchw, nhwc or nC..16c-style blocked inputs runs its own reduction instead: oneDNN
// 2.6 parallelises global pooling over (batch, output pixel) in channels-last layouts, so a batch-1
// squeeze-excite input ran on one thread (efficientnet_b0's first, 32x112x112 nhwc: 0.13 ms, where
// splitting the pixels between the threads takes a fraction of that).
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/global_average.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "backends/cpu/vec_math.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

bool is_global(const ir::Node& n) { return n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool"; }

bool pool_supports(const ir::Node& node, const CpuOptions& o) {
  if (!node.has_input(0) || node.inputs[0]->dtype != DType::kFloat32) return false;
  const auto& shape = node.inputs[0]->shape;
  if (!shape || shape->size() < 3 || shape->size() > 5) return false;
  if (node.num_outputs() > 1 && node.has_output(1)) return false;  // MaxPool's Indices
  if (node.op_type == "MaxPool") {
    if (node.attr_int("storage_order", 0) != 0) return false;
    if (node.opset < 8) return false;
  }
  if (node.op_type == "AveragePool" && node.attr_int("ceil_mode", 0) != 0 && node.attr_int("count_include_pad", 0) != 0)
    return false;  // the ceil-mode tail would count oneDNN's extra right padding as padding
  if (!is_global(node)) {
    std::vector<int64_t> k = node.attr_ints("kernel_shape");
    if (k.size() + 2 != shape->size()) return false;
  }
  return true;
}

struct PoolPlan {
  md src;
  std::vector<int64_t> out_dims;
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
};


// Whether a bf16 result may stand for this pooling's: it is only rounded to bf16 next, or (max pooling:
// the max of bf16 values is one of them, exactly) every reader takes bf16 storage.
bool bf16_result_fits(const ir::Node& n) {
  const ir::Value& y = *n.outputs[0];
  if (only_rounded_to_bf16(y)) return true;
  return (n.op_type == "MaxPool" || n.op_type == "GlobalMaxPool") && readers_take_bf16_storage(y);
}

class PoolKernel : public Kernel {
 public:
  PoolKernel(const ir::Node& node, bool blocked_out)
      : node_(node), blocked_out_(blocked_out), bf16_(blocked_out && bf16_result_fits(node)) {}

  // GlobalAveragePool: the own reduction on the layouts it reads (all oneDNN convolutions write), oneDNN
  // pooling on any other.
  std::string name() const override {
    return node_.op_type == "GlobalAveragePool" ? "cpu:vec:global_average:" + vec_math_target() : "cpu:onednn:pooling";
  }
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    if (x->dtype() != DType::kFloat32) return Status::invalid(node_.op_type + ": the cpu kernel takes float32 X");
    if (x->rank() < 3 || x->rank() > 5)
      return Status::invalid(node_.op_type + ": X must have 1 to 3 spatial dims, got " + x->describe());
    Tensor x_f32;
    if (stores_bf16(*x)) {
      // oneDNN's jit pooling reads bf16 into bf16; a reference implementation would be a cliff.
      PoolPlan* p = nullptr;
      if (bf16_) {
        Result<PoolPlan*> r = plan_for(x->dims(), desc_of(*x));
        if (r.ok()) p = *r;
      }
      if (!p || is_reference_impl(p->pd)) {
        FERRY_ASSIGN_OR_RETURN(x_f32, reorder_to(*x, with_data_type(desc_of(*x), dt::f32)));
        x = &x_f32;
      }
    }
    const md src_md = desc_of(*x);
    PixelBlocks view;
    if (node_.op_type == "GlobalAveragePool" && x->numel() > 0 && pixel_blocks(src_md, &view)) {
      std::vector<int64_t> out_dims(x->rank(), 1);
      out_dims[0] = x->dim(0);
      out_dims[1] = x->dim(1);
      FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_dims));
      global_average(static_cast<const float*>(x->raw()), view, x->dim(1), y->data<float>());
      return Status();
    }
    FERRY_ASSIGN_OR_RETURN(PoolPlan * p, plan_for(x->dims(), src_md));
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, p->out_dims, p->pd.dst_desc(), blocked_out_));
    if (x->numel() > 0) {
      SerialIfSmall serial(x->numel() < kSmallElementwise);
      p->prim.execute(stream(), {{DNNL_ARG_SRC, as_memory(*x, src_md)}, {DNNL_ARG_DST, as_memory(dst, p->pd.dst_desc())}});
      stream().wait();
    }
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  Result<PoolPlan*> plan_for(const std::vector<int64_t>& xd, const md& src_md) {
    for (auto& p : plans_)
      if (p->src == src_md) return p.get();
    const std::string& op = node_.op_type;
    const int sr = static_cast<int>(xd.size()) - 2;
    std::vector<int64_t> in_sp(xd.begin() + 2, xd.end());
    ops::nn::WindowGeom g;
    if (is_global(node_)) {
      g.in = in_sp;
      g.kernel = in_sp;
      g.strides.assign(sr, 1);
      g.dilations.assign(sr, 1);
      g.pad_begin.assign(sr, 0);
      g.pad_end.assign(sr, 0);
      g.out.assign(sr, 1);
      for (int64_t d : in_sp)
        if (d <= 0) return Status::invalid(op + ": empty spatial dims in " + dims_to_string(xd));
    } else {
      std::vector<int64_t> k = node_.attr_ints("kernel_shape");
      if (static_cast<int>(k.size()) != sr)
        return Status::invalid(op + ": kernel_shape has " + std::to_string(k.size()) + " values but X " +
                               dims_to_string(xd) + " has " + std::to_string(sr) + " spatial dims");
      ops::nn::WindowOptions wo;
      wo.use_ceil_mode = true;
      wo.use_dilations = op == "MaxPool" ? node_.opset >= 10 : node_.opset >= 19;
      FERRY_ASSIGN_OR_RETURN(g, ops::nn::window_geometry(node_, in_sp, k, wo));
      for (int i = 0; i < sr; ++i) {
        // ceil_mode's last window may reach past the right pad: oneDNN wants that as right padding.
        const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1;
        g.pad_end[i] = std::max(g.pad_end[i], (g.out[i] - 1) * g.strides[i] + eff - g.in[i] - g.pad_begin[i]);
        if (g.pad_begin[i] >= eff || g.pad_end[i] >= eff)
          return Status::unsupported(op + ": a window lies entirely in the padding");
      }
    }
    auto plan = std::make_unique<PoolPlan>();
    plan->src = src_md;
    plan->out_dims = {xd[0], xd[1]};
    for (int64_t o : g.out) plan->out_dims.push_back(o);
    dnnl::algorithm alg = dnnl::algorithm::pooling_max;
    if (op == "AveragePool" || op == "GlobalAveragePool")
      alg = node_.attr_int("count_include_pad", 0) != 0 ? dnnl::algorithm::pooling_avg_include_padding
                                                        : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::memory::dims dil;
    for (int64_t d : g.dilations) dil.push_back(d - 1);
    md dst_any(to_dims(plan->out_dims), src_md.data_type(), tag::any);  // bf16 into bf16 (see the top)
    try {
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src_md, dst_any, to_dims(g.strides),
                                       to_dims(g.kernel), dil, to_dims(g.pad_begin), to_dims(g.pad_end));
      plan->pd = dnnl::pooling_v2_forward::primitive_desc(d, engine());
      plan->prim = dnnl::pooling_v2_forward(plan->pd);
    } catch (const dnnl::error& e) {
      return Status::unsupported(op + ": oneDNN has no pooling for X " + dims_to_string(xd) + ": " + e.what());
    }
    plans_.push_back(std::move(plan));
    return plans_.back().get();
  }

  const ir::Node& node_;
  bool blocked_out_;
  bool bf16_;  // pools a bf16-stored X in bf16 (its result is only rounded to bf16)
  std::vector<std::unique_ptr<PoolPlan>> plans_;  // by input descriptor
};

Result<std::unique_ptr<Kernel>> create_pool(const ir::Node& node, const CpuOptions& o) {
  const bool blocked = node.has_output(0) && may_produce_blocked(*node.outputs[0]);
  return std::unique_ptr<Kernel>(new PoolKernel(node, blocked));
}

}  // namespace

void register_pool(KernelTable& t) {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    t.push_back({"", op, pool_supports, create_pool});
    declare_layout_aware("", op);
  }
}

}  // namespace ferry::backends::cpu
