// Conv and com.ferry FusedConv on oneDNN convolution primitives (fp32, 1-3 spatial dims, groups,
// dilations, strides, explicit or auto pads, bias, post-ops incl. the residual `sum`).
//
// The primitive is created with format `any` for source, weights and destination, so oneDNN picks its
// fast blocked layouts (nChw16c on AVX-512); constant weights are reordered into the picked layout once.
// The output stays blocked when every consumer is a layout-aware cpu kernel, which is what keeps
// reorders out of a CNN's conv -> conv -> pool chain; otherwise it is reordered to plain after the
// primitive ran (a plain destination would make oneDNN pick its much slower gemm convolution).
//
// A node the precision pass marked bf16 (wants_native_bf16) runs oneDNN's bf16 convolution: source and
// weights in bf16 (the source converted by the reorder into the primitive's layout; the pass already
// rounded it to bf16 values, so the conversion is exact), fp32 accumulation,
// bias and destination in fp32 (the RoundFloat after the node rounds the result as the device stores it).
// When that RoundFloat is the output's only reader, the destination is bf16 instead (layout.h's bf16
// storage): half the bytes written, and the next conv reads it without a conversion.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_choices.h"
#include "backends/cpu/isa_probe.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "backends/cpu/post_ops.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// The spatial rank the node works on: from W's static rank (or X's), 0 when unknown.
int spatial_rank(const ir::Node& node) {
  for (int i : {1, 0})
    if (node.has_input(i) && node.inputs[i]->shape) return static_cast<int>(node.inputs[i]->shape->size()) - 2;
  return 0;
}

bool conv_supports(const ir::Node& node, const CpuOptions& o) {
  if (!node.has_input(0) || !node.has_input(1)) return false;
  for (int i = 0; i < node.num_inputs(); ++i)
    if (node.has_input(i) && node.inputs[i]->dtype != DType::kFloat32) return false;
  const int sr = spatial_rank(node);
  if (sr < 1 || sr > 3) return false;
  if (node.has_input(0) && node.inputs[0]->shape && static_cast<int>(node.inputs[0]->shape->size()) != sr + 2) return false;
  auto ops = read_post_ops(node);
  if (!ops.ok() || !post_ops_supported(*ops)) return false;
  // A residual input without a `sum` post-op (or the reverse) is not a FusedConv this kernel knows.
  if ((sum_index(*ops) >= 0) != node.has_input(3)) return false;
  return true;
}


// oneDNN 2.6 has two fp32 1x1 convolution kernels on AVX-512: brgconv on nhwc (what format `any`
// picks) and jit_1x1 on nChw16c. While a CNN's activations stay in the caches brgconv is as fast or
// faster (resnet50 batch 1, even at batch 2); once they stream from memory jit_1x1 is faster, most on
// the convolutions with a residual sum (resnet50 batch 8, layer1: 4.3 -> 3.0 ms each; the model 170 ->
// 152 ms, median of 6 alternating runs; batch 4: 86 -> 79 ms; AMD EPYC Zen 5, 2 threads). Only in
// graphs without grouped convolutions (nor FusedBatchNorm, see dense_conv_sample_bytes): next to
// depthwise convolutions, which stay nhwc, the reorders
// cost more than the kernel gains (mobilenet_v2 batch 8: 19.8 -> 23.6 ms). "Streams from memory": the
// graph's largest convolution input or output at this batch takes 8 MiB or more (resnet50: 3.2 MiB a
// sample). --cpu-blocked-1x1 off / on turns the rule off / on for every such 1x1 convolution. Only
// on AVX-512: below it oneDNN has no brgconv and `any` picks the blocked jit_1x1 kernel by itself.
constexpr int64_t kStreamingActivationBytes = int64_t{8} << 20;

// The largest per-sample float bytes of a convolution's X or Y in the node's graph; 0 when the graph
// has a grouped convolution or a FusedBatchNorm (DenseNet's concatenations: there the 3x3 results
// arrive channels-last, and blocked 1x1 convolutions put a conversion on every concatenated input:
// densenet121 at batch 8 took 240 ms with them, 150 without), or no static per-sample shape at all.
int64_t dense_conv_sample_bytes(const ir::Node& node) {
  const ir::Graph* g = node.has_output(0) ? node.outputs[0]->graph : nullptr;
  if (!g) return 0;
  int64_t most = 0;
  for (const auto& n : g->nodes) {
    if (n->domain == "com.ferry" && n->op_type == "FusedBatchNorm") return 0;
    const bool conv = (n->domain.empty() && n->op_type == "Conv") || (n->domain == "com.ferry" && n->op_type == "FusedConv");
    if (!conv) continue;
    if (n->attr_int("group", 1) != 1) return 0;
    for (const ir::Value* v : {n->has_input(0) ? n->inputs[0] : nullptr, n->has_output(0) ? n->outputs[0] : nullptr}) {
      if (!v || !v->shape || v->shape->size() < 2) continue;
      int64_t bytes = 4;
      for (size_t i = 1; i < v->shape->size() && bytes > 0; ++i)
        bytes = (*v->shape)[i].is_static() ? bytes * (*v->shape)[i].value : 0;
      most = std::max(most, bytes);
    }
  }
  return most;
}

// Everything prepared for one input shape.
struct ConvPlan {
  std::vector<int64_t> in_dims, out_dims;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  Tensor packed_w;  // constant weights in pd.weights_desc() (undefined when W is not constant)
  std::shared_ptr<const DnnlLayout> out_layout;  // null: plain output
  // The primitive's descriptors, queried once, and its arguments, rebound per run (the map holds
  // handles of the same memory objects).
  md src_md, w_md, b_md, dst_md;
  BoundMemory src, w, b, dst;
  std::unordered_map<int, dnnl::memory> args;
};

class ConvKernel : public Kernel {
 public:
  ConvKernel(const ir::Node& node, std::vector<PostOp> ops, bool blocked_out, const CpuOptions& o)
      : node_(node),
        ops_(std::move(ops)),
        blocked_out_(blocked_out),
        winograd_allowed_(winograd_allowed(o)),
        blocked_1x1_(o.blocked_1x1),
        bf16_(wants_native_bf16(node, o)),
        bf16_out_(bf16_ && blocked_out && only_rounded_to_bf16(*node.outputs[0])) {}

  Status init() {
    const ir::Value* w = node_.inputs[1];
    if (w->is_constant()) const_w_ = w->initializer;
    if (node_.has_input(2) && node_.inputs[2]->is_constant()) const_b_ = node_.inputs[2]->initializer;
    if (const_w_.defined()) FERRY_RETURN_IF_ERROR(check_weights(const_w_));
    const ir::Value* x = node_.inputs[0];
    if (x->shape && is_static(*x->shape) && const_w_.defined()) {
      FERRY_ASSIGN_OR_RETURN(ConvPlan * p, plan_for(static_dims(*x->shape), const_w_));
      (void)p;
    }
    return Status();
  }

  std::string name() const override { return impl_.empty() ? "cpu:onednn" : "cpu:onednn:" + impl_; }
  bool accepts_layouts() const override { return true; }
  // With a residual, the destination may take over Z's bytes where Z dies here: the sum post-op reads
  // each destination element before writing it, so the residual need not be copied in first (at
  // resnet50 batch 8 that copy moved 25 MB per bottleneck of layer1). Not when X is Z too: the
  // convolution reads X's neighbourhood after writing the destination.
  int inplace_input(int output) const override {
    if (output != 0 || sum_index(ops_) < 0 || !node_.has_input(3) || node_.inputs[3] == node_.inputs[0]) return -1;
    return 3;
  }

  // With static shapes the weights were packed once at init: the packed copy becomes the initializer.
  Tensor adopt_constant(int input) override {
    if (input != 1 || plans_.size() != 1 || !plans_[0]->packed_w.defined() || !const_w_.is_plain()) return Tensor();
    ConvPlan& p = *plans_[0];
    Tensor adopted = adopt_packed(const_w_, p.packed_w, p.pd.weights_desc(), plain_desc(DType::kFloat32, weight_dims(const_w_)));
    if (adopted.defined()) const_w_ = adopted;
    return adopted;
  }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* w, ops::nn::tensor_in(ctx, 1, "W"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* b, ops::nn::optional_tensor_in(ctx, 2, "B"));
    if (x->dtype() != DType::kFloat32 || w->dtype() != DType::kFloat32 || (b && b->dtype() != DType::kFloat32))
      return Status::invalid(op + ": the cpu kernel takes float32 X, W and B");
    // W may be this kernel's own adopted packed weights (adopt_constant); any other non-plain W or B
    // (a caller's) is made plain first.
    Tensor w_plain, b_plain;
    if (!w->is_plain() && !(const_w_.defined() && w->raw() == const_w_.raw())) {
      FERRY_ASSIGN_OR_RETURN(w_plain, w->plain());
      w = &w_plain;
    }
    if (b && !b->is_plain()) {
      FERRY_ASSIGN_OR_RETURN(b_plain, b->plain());
      b = &b_plain;
    }
    // The constant weights were checked at init; a W that arrives per run is checked each time.
    if (!(const_w_.defined() && w->raw() == const_w_.raw())) FERRY_RETURN_IF_ERROR(check_weights(*w));
    FERRY_ASSIGN_OR_RETURN(ConvPlan * p, plan_for(x->dims(), *w));
    if (b && (b->rank() != 1 || b->dim(0) != w->dim(0)))
      return Status::invalid(op + ": B must be a 1-D tensor of " + std::to_string(w->dim(0)) + " values, got " +
                             b->describe());

    FERRY_ASSIGN_OR_RETURN(Tensor src, reorder_to(*x, p->src_md));
    Tensor wt = p->packed_w;
    if (!wt.defined()) {
      FERRY_ASSIGN_OR_RETURN(wt, reorder_to(w->reshaped(weight_dims(*w)).value(), p->w_md));
    }
    const md& dst_md = p->dst_md;
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, p->out_dims, dst_md, blocked_out_));
    const dnnl::memory& dst_mem = p->dst.bind(dst_md, dst);
    if (sum_index(ops_) >= 0) {
      FERRY_ASSIGN_OR_RETURN(const Tensor* z, ops::nn::tensor_in(ctx, 3, "Z"));
      if (z->dtype() != DType::kFloat32 || z->dims() != p->out_dims)
        return Status::invalid(op + ": the residual Z must be float32" + dims_to_string(p->out_dims) + ", got " +
                               z->describe());
      // The sum post-op adds what dst holds: put the residual there, in dst's layout. (oneDNN 2.6's
      // brgconv has no full-tensor binary post-op that would read Z in place: it falls back to gemm.)
      // Where the planner gave dst Z's bytes (inplace_input) and the layouts agree, it is there already.
      const bool same_bytes = dst.raw() == z->raw();
      if (desc_of(*z) == dst_md) {
        if (!same_bytes) std::memcpy(dst.raw(), z->raw(), dst_md.get_size());
      } else if (same_bytes) {
        // Another layout in the same bytes: reorder through a copy (a reorder cannot run in place).
        Tensor z_copy;
        if (z->is_plain()) {
          z_copy = Tensor(z->dtype(), z->dims());
          std::memcpy(z_copy.raw(), z->raw(), z->nbytes());
        } else {
          FERRY_ASSIGN_OR_RETURN(z_copy, z->plain());
        }
        reorder(as_memory(z_copy), dst_mem);
      } else {
        reorder(as_memory(*z), dst_mem);
      }
    }
    p->args[DNNL_ARG_DST] = dst_mem;
    p->args[DNNL_ARG_SRC] = p->src.bind(p->src_md, src);
    p->args[DNNL_ARG_WEIGHTS] = p->w.bind(p->w_md, wt);
    if (b) p->args[DNNL_ARG_BIAS] = p->b.bind(p->b_md, *b);
    if (x->numel() > 0) {
      SerialIfSmall serial(dst.numel() * (w->numel() / std::max<int64_t>(w->dim(0), 1)) < kSmallMacs);
      p->prim.execute(stream(), p->args);
      stream().wait();
    }
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  // W as oneDNN sees it: [G, M/G, C/G, k...] with groups, else [M, C/G, k...] (same bytes).
  std::vector<int64_t> weight_dims(const Tensor& w) const {
    std::vector<int64_t> d = w.dims();
    if (group_ > 1) {
      d[0] /= group_;
      d.insert(d.begin(), group_);
    }
    return d;
  }

  Status check_weights(const Tensor& w) {
    const std::string& op = node_.op_type;
    group_ = node_.attr_int("group", 1);
    if (group_ <= 0) return Status::invalid(op + ": group must be positive");
    if (w.rank() < 3 || w.rank() > 5) return Status::invalid(op + ": W must have 1 to 3 spatial dims, got " + w.describe());
    if (w.dim(0) % group_ != 0)
      return Status::invalid(op + ": W's output channels (" + std::to_string(w.dim(0)) + ") are not divisible by group " +
                             std::to_string(group_));
    std::vector<int64_t> ks = node_.attr_ints("kernel_shape");
    if (!ks.empty() && ks != std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()))
      return Status::invalid(op + ": kernel_shape does not match W " + w.describe());
    return Status();
  }

  // oneDNN's fp32 Winograd kernels (F(2x2,3x3) at batch 1, F(4x4,3x3) for larger batches) do 3x3
  // stride-1 convolutions in 0.5-0.65x the time of the direct ones on AVX-512, with errors around 1e-6
  // relative (the direct kernels: ~1e-7). Small channel counts gain nothing. --cpu-winograd off
  // turns them off (for comparisons).
  bool winograd_suits(const std::vector<int64_t>& xd, const Tensor& w, const ops::nn::WindowGeom& g) const {
    if (bf16_ || !winograd_allowed_ || group_ != 1 || w.rank() != 4 || w.dim(2) != 3 || w.dim(3) != 3) return false;
    // Few output channels: DenseNet's 3x3 convolutions (128 -> 32, growth rate 32) between channels-last
    // tensors pay two layout conversions per Winograd kernel, and densenet121 at batch 1 took 30-35 ms
    // with them against 25-31 ms without (sum of nodes, 2 threads, AVX-512; resnet50 even either way).
    if (w.dim(0) < 64 || w.dim(1) < 32) return false;
    // Measured on the target (AVX-512, 1-2 threads): at batch 1 F(2x2,3x3) only wins from ~28x28
    // outputs up (56x56: 0.68x, 14x14: even, 7x7: slower); from batch 4 F(4x4,3x3) wins from 7x7 up,
    // but on 7x7 maps (a 4x4-tile grid that pads 7 to 8) it wins little there, and its transformed
    // weights take 4x the bytes: resnet50's layer4 alone adds 85 MB. Measured at batch 8: skipping
    // outputs under 14x14 keeps the latency (within noise) and takes the peak from 492 to 378 MiB.
    const int64_t min_out = xd[0] >= 4 ? 14 : 20;
    for (int i = 0; i < 2; ++i)
      if (g.strides[i] != 1 || g.dilations[i] != 1 || g.out[i] < min_out) return false;
    return true;
  }

  // See kStreamingActivationBytes.
  bool blocked_1x1_pays(const std::vector<int64_t>& xd, const Tensor& w) const {
    if (bf16_ || group_ != 1 || w.rank() != 4 || w.dim(2) != 1 || w.dim(3) != 1) return false;
    if (xd[1] % 16 != 0 || w.dim(0) % 16 != 0) return false;
    // Below AVX-512 there is no brgconv: `any` already picks jit_1x1 (nChw8c on AVX2), and nChw16c
    // would get oneDNN's reference kernel (`ref:any`, seen on a Zen 3), whatever the override says.
    if (!isa_has(dnnl::cpu_isa::avx512_core)) return false;
    if (blocked_1x1_ != Choice::kAuto) return blocked_1x1_ == Choice::kOn;
    if (dense_sample_bytes_ < 0) dense_sample_bytes_ = dense_conv_sample_bytes(node_);
    return dense_sample_bytes_ > 0 && xd[0] * dense_sample_bytes_ >= kStreamingActivationBytes;
  }

  // A grouped (not depthwise) convolution: format `any` picks oneDNN's jit kernel on nChw8c (RegNet's
  // group width 8) or nChw16c (widths of whole 16-channel blocks), between 1x1 convolutions that brgconv
  // runs on nhwc, so each one paid two reorders. The same jit kernel runs on nhwc at about the same speed
  // (bench/README.md): regnet_y_400mf batch 1 25% faster on AMD Zen 4 (width 8); regnet_x_800mf batch 8
  // 54.9/48.0, 55.5/53.2, 52.4/50.9 ms and regnet_y_800mf batch 1 9.8/7.7, 9.7/8.1 ms on an Intel Xeon
  // with AMX (width 16, old/new alternating). Only with AVX-512 (where the neighbours are nhwc) and fp32.
  bool channels_last_grouped(const std::vector<int64_t>& xd, const Tensor& w) const {
    if (bf16_ || group_ <= 1 || xd.size() != 4 || w.rank() != 4 || group_ == xd[1]) return false;
    return isa_has(dnnl::cpu_isa::avx512_core);
  }

  // The layout the source and destination are asked for instead of format `any`, where one of the
  // rules above pays; none: `any`.
  std::optional<tag> activation_layout(const std::vector<int64_t>& xd, const Tensor& w) const {
    if (blocked_1x1_pays(xd, w)) return tag::aBcd16b;
    if (channels_last_grouped(xd, w)) return tag::nhwc;
    return std::nullopt;
  }

  Result<ConvPlan*> plan_for(const std::vector<int64_t>& xd, const Tensor& w) {
    for (auto& p : plans_)
      if (p->in_dims == xd) return p.get();
    const std::string& op = node_.op_type;
    if (static_cast<int>(xd.size()) != w.rank())
      return Status::invalid(op + ": X must have rank " + std::to_string(w.rank()) + " (like W " + w.describe() +
                             "), got " + dims_to_string(xd));
    if (xd[1] != w.dim(1) * group_)
      return Status::invalid(op + ": X has " + std::to_string(xd[1]) + " channels but W " + w.describe() +
                             " with group " + std::to_string(group_) + " needs " + std::to_string(w.dim(1) * group_));
    std::vector<int64_t> in_sp(xd.begin() + 2, xd.end()), k(w.dims().begin() + 2, w.dims().end());
    FERRY_ASSIGN_OR_RETURN(ops::nn::WindowGeom g, ops::nn::window_geometry(node_, in_sp, k, {}));
    auto plan = std::make_unique<ConvPlan>();
    plan->in_dims = xd;
    plan->out_dims = {xd[0], w.dim(0)};
    for (int64_t o : g.out) plan->out_dims.push_back(o);
    dnnl::memory::dims dil;
    for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps
    const std::vector<int64_t> wd = weight_dims(w);
    md src_any, w_any, dst_any;
    auto set_types = [&](dt in, dt out) {
      src_any = md(to_dims(xd), in, tag::any);
      w_any = md(to_dims(wd), in, tag::any);
      dst_any = md(to_dims(plan->out_dims), out, tag::any);
    };
    set_types(bf16_ ? dt::bf16 : dt::f32, bf16_out_ ? dt::bf16 : dt::f32);  // winograd_suits is false for bf16
    if (auto t = activation_layout(xd, w)) {
      src_any = md(to_dims(xd), dt::f32, *t);
      dst_any = md(to_dims(plan->out_dims), dt::f32, *t);
    }
    md bias_md = node_.has_input(2) ? md({w.dim(0)}, dt::f32, tag::x) : md();
    dnnl::primitive_attr attr;
    dnnl::post_ops po;
    FERRY_RETURN_IF_ERROR(append_post_ops(ops_, po));
    attr.set_post_ops(po);
    auto make = [&](dnnl::algorithm a) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, a, src_any, w_any, bias_md, dst_any,
                                        to_dims(g.strides), dil, to_dims(g.pad_begin), to_dims(g.pad_end));
      plan->pd = dnnl::convolution_forward::primitive_desc(d, attr, engine());
      plan->prim = dnnl::convolution_forward(plan->pd);
    };
    bool made = false;
    if (winograd_suits(xd, w, g)) {
      try {
        make(dnnl::algorithm::convolution_winograd);
        made = true;
      } catch (const dnnl::error&) {
        // Not every shape / post-op chain has a Winograd kernel: the direct one below.
      }
    }
    try {
      if (!made && bf16_) {
        try {
          make(dnnl::algorithm::convolution_direct);
          made = true;
        } catch (const dnnl::error&) {
          // No bf16 kernel for this shape / post-op chain: fp32 on the bf16-rounded values.
          set_types(dt::f32, dt::f32);
        }
      }
      if (!made) make(dnnl::algorithm::convolution_direct);
    } catch (const dnnl::error& e) {
      return Status::unsupported(op + ": oneDNN has no convolution for X " + dims_to_string(xd) + ", W " +
                                 w.describe() + ": " + e.what());
    }
    impl_ = plan->pd.impl_info_str();
    plan->src_md = plan->pd.src_desc();
    plan->w_md = plan->pd.weights_desc();
    plan->b_md = plan->pd.bias_desc();
    plan->dst_md = plan->pd.dst_desc();
    if (&w == &const_w_ || (const_w_.defined() && w.raw() == const_w_.raw())) {
      // Adopted weights (packed for another input shape) are unpacked once for this plan's layout.
      Tensor plain_w = const_w_;
      if (!plain_w.is_plain()) { FERRY_ASSIGN_OR_RETURN(plain_w, const_w_.plain()); }
      FERRY_ASSIGN_OR_RETURN(Tensor wv, plain_w.reshaped(wd));
      FERRY_ASSIGN_OR_RETURN(plan->packed_w, reorder_to(wv, plan->pd.weights_desc()));
    }
    plans_.push_back(std::move(plan));
    return plans_.back().get();
  }

  const ir::Node& node_;
  std::vector<PostOp> ops_;
  bool blocked_out_;
  bool winograd_allowed_;  // --cpu-winograd
  Choice blocked_1x1_;     // --cpu-blocked-1x1
  bool bf16_;      // native bf16 source and weights
  bool bf16_out_;  // and a bf16 destination
  int64_t group_ = 1;
  mutable int64_t dense_sample_bytes_ = -1;  // dense_conv_sample_bytes, computed at the first plan
  Tensor const_w_, const_b_;
  std::vector<std::unique_ptr<ConvPlan>> plans_;  // by input dims (one for static shapes)
  std::string impl_;
};

Result<std::unique_ptr<Kernel>> create_conv(const ir::Node& node, const CpuOptions& o) {
  FERRY_ASSIGN_OR_RETURN(std::vector<PostOp> ops, read_post_ops(node));
  const bool blocked = node.has_output(0) && may_produce_blocked(*node.outputs[0]);
  auto k = std::make_unique<ConvKernel>(node, std::move(ops), blocked, o);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_conv(KernelTable& t) {
  t.push_back({"", "Conv", conv_supports, create_conv});
  t.push_back({"com.ferry", "FusedConv", conv_supports, create_conv});
  declare_layout_aware("", "Conv");
  declare_layout_aware("com.ferry", "FusedConv");
}

}  // namespace ferry::backends::cpu
