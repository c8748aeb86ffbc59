// Depthwise Conv / com.ferry FusedConv (2-D, float32, one filter per channel: group = input channels
// = output channels, constant weights) on an own vectorized kernel (vec_depthwise.h) in channels-last
// layout, with the bias and the elementwise post-ops applied in registers.
//
// Why not oneDNN: 2.6's depthwise kernel for nhwc (brdgmm_dw) ran efficientnet_b0's and mobilenet_v2's
// depthwise convolutions at 20-40 GB/s while their data sits in the caches (batch 1, 56x56x144 3x3:
// 0.18 ms for 3.6 MB), about a third of what the loads allow, and a depthwise convolution is all
// loads. This kernel reads each input vector once per tap with the tap's weights shared by 8 output
// pixels. A node it does not cover (a residual `sum`, a post-op it lacks, bf16, other ranks, a
// channel multiplier) stays on conv.cc's oneDNN kernel. Opt-in for now: --cpu-own-depthwise on
// (see depthwise_supports for why).
//
// Output: nhwc in a DnnlLayout when every consumer takes layouts (oneDNN's 1x1 convolutions read it
// directly), else reordered to plain NCHW. Input: read as nhwc, reordered first when it is not.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <omp.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_choices.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/post_ops.h"
#include "backends/cpu/small_work.h"
#include "backends/cpu/vec_depthwise.h"
#include "backends/cpu/vec_math.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;


// The node's post-ops as the kernel's, or false when one has no equivalent here (sum included).
bool depthwise_post_ops(const std::vector<PostOp>& ops, std::vector<DepthwisePostOp>* out) {
  out->clear();
  for (const PostOp& op : ops) {
    const std::string& k = op.kind;
    DepthwiseAct a;
    if (k == "Relu") a = DepthwiseAct::kRelu;
    else if (k == "LeakyRelu") a = DepthwiseAct::kLeakyRelu;
    else if (k == "Clip") a = DepthwiseAct::kClip;
    else if (k == "Sigmoid") a = DepthwiseAct::kSigmoid;
    else if (k == "Silu") a = DepthwiseAct::kSilu;
    else if (k == "HardSigmoid") a = DepthwiseAct::kHardSigmoid;
    else if (k == "HardSwish") a = DepthwiseAct::kHardSwish;
    else if (k == "Tanh") a = DepthwiseAct::kTanh;
    else if (k == "Elu") a = DepthwiseAct::kElu;
    else if (k == "Abs") a = DepthwiseAct::kAbs;
    else if (k == "Mul") a = DepthwiseAct::kMul;
    else if (k == "Add") a = DepthwiseAct::kAdd;
    else return false;
    out->push_back({a, op.alpha, op.beta});
  }
  return true;
}

// Off unless --cpu-own-depthwise on. On an AVX2 CPU (Zen 3) it measured slower in the network than
// oneDNN's jit_dw, which reads the nChw8c blocked layout its 1x1 neighbours write while this kernel
// reorders it to nhwc and back (mobilenet_v2 batch 1, sum of nodes: 10.9 ms against 7.0; the stride-2
// 96-channel 112x112 layer alone 3.0 against 0.19 ms). It was written for AVX-512, where the
// neighbours are nhwc brgconv; it has not been measured there yet, so it is not the default either.
bool depthwise_supports(const ir::Node& node, const CpuOptions& o) {
  if (!own_depthwise_chosen(o) || !node.has_input(0) || !node.has_input(1) || node.has_input(3)) return false;
  if (wants_native_bf16(node, o)) return false;
  for (int i = 0; i < std::min(node.num_inputs(), 3); ++i)
    if (node.has_input(i) && node.inputs[i]->dtype != DType::kFloat32) return false;
  const ir::Value* w = node.inputs[1];
  if (!w->is_constant() || w->initializer.rank() != 4 || w->initializer.dim(1) != 1) return false;
  const int64_t c = w->initializer.dim(0);
  if (c < 1 || node.attr_int("group", 1) != c) return false;
  const std::vector<int64_t> ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && ks != std::vector<int64_t>{w->initializer.dim(2), w->initializer.dim(3)}) return false;
  const ir::Value* x = node.inputs[0];
  if (x->shape && (x->shape->size() != 4 || ((*x->shape)[1].is_static() && (*x->shape)[1].value != c))) return false;
  if (node.has_input(2) && (!node.inputs[2]->is_constant() || node.inputs[2]->initializer.numel() != c)) return false;
  auto ops = read_post_ops(node);
  std::vector<DepthwisePostOp> mine;
  return ops.ok() && depthwise_post_ops(*ops, &mine);
}

class DepthwiseConvKernel : public Kernel {
 public:
  DepthwiseConvKernel(const ir::Node& node, bool blocked_out) : node_(node), blocked_out_(blocked_out) {}

  Status init() {
    FERRY_ASSIGN_OR_RETURN(std::vector<PostOp> ops, read_post_ops(node_));
    if (!depthwise_post_ops(ops, &ops_)) return Status::unsupported(node_.label() + ": post-ops the depthwise kernel lacks");
    // Weights [C, 1, kh, kw] -> [kh * kw, padded C]; bias -> padded C; padding zero.
    Tensor w = node_.inputs[1]->initializer;
    if (!w.is_plain()) { FERRY_ASSIGN_OR_RETURN(w, w.plain()); }
    c_ = w.dim(0);
    kh_ = w.dim(2);
    kw_ = w.dim(3);
    const int64_t cp = depthwise_padded_channels(c_);
    weights_.assign(static_cast<size_t>(kh_ * kw_ * cp), 0.f);
    const float* wd = w.data<float>();
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t t = 0; t < kh_ * kw_; ++t) weights_[t * cp + c] = wd[c * kh_ * kw_ + t];
    bias_.assign(static_cast<size_t>(cp), 0.f);
    if (node_.has_input(2)) {
      Tensor b = node_.inputs[2]->initializer;
      if (!b.is_plain()) { FERRY_ASSIGN_OR_RETURN(b, b.plain()); }
      std::copy(b.data<float>(), b.data<float>() + c_, bias_.begin());
    }
    return Status();
  }

  std::string name() const override { return "cpu:vec:depthwise:" + vec_math_target(); }
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    if (x->dtype() != DType::kFloat32) return Status::invalid(op + ": the cpu kernel takes float32 X");
    if (x->rank() != 4 || x->dim(1) != c_)
      return Status::invalid(op + ": X must be [N, " + std::to_string(c_) + ", H, W] for W " +
                             node_.inputs[1]->initializer.describe() + ", got " + x->describe());
    if (x->dims() != in_dims_) {
      FERRY_ASSIGN_OR_RETURN(ops::nn::WindowGeom g, ops::nn::window_geometry(node_, {x->dim(2), x->dim(3)}, {kh_, kw_}, {}));
      shape_ = DepthwiseShape{c_, x->dim(2), x->dim(3), g.out[0], g.out[1], kh_, kw_, g.strides[0], g.strides[1],
                              g.dilations[0], g.dilations[1], g.pad_begin[0], g.pad_begin[1]};
      in_dims_ = x->dims();
      out_dims_ = {x->dim(0), c_, g.out[0], g.out[1]};
      in_md_ = md({x->dim(0), c_, x->dim(2), x->dim(3)}, dnnl::memory::data_type::f32, tag::nhwc);
      out_md_ = md({x->dim(0), c_, g.out[0], g.out[1]}, dnnl::memory::data_type::f32, tag::nhwc);
    }
    FERRY_ASSIGN_OR_RETURN(Tensor src, reorder_to(*x, in_md_));
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, out_dims_, out_md_, blocked_out_));
    if (dst.numel() > 0) compute(src.data<float>(), dst.data<float>(), x->dim(0));
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  // One work item per thread: a contiguous range of the batch's output rows (crossing images), or,
  // where a map has few rows for the threads (7x7x1152 at batch 1), every row of a range of whole
  // channel vectors. Contiguous ranges keep each thread's input rows in its cache and call the
  // kernel once per image rather than once per row.
  void compute(const float* x, float* y, int64_t n) const {
    const DepthwiseShape& s = shape_;
    const int64_t rows = n * s.out_h;
    const bool parallel = omp_get_max_threads() > 1 && rows * s.out_w * s.channels >= kSmallElementwise;
    const int64_t threads = parallel ? omp_get_max_threads() : 1;
    const int64_t vectors = depthwise_padded_channels(s.channels) / 16;
    const bool by_channels = threads > 1 && rows < 8 * threads && vectors >= 2 * threads;
    const int64_t in_image = s.in_h * s.in_w * s.channels, out_image = s.out_h * s.out_w * s.channels;
    auto run_rows = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      while (r0 < r1) {
        const int64_t img = r0 / s.out_h, oh0 = r0 % s.out_h, oh1 = std::min(s.out_h, oh0 + (r1 - r0));
        vec_depthwise_rows(x + img * in_image, weights_.data(), bias_.data(), y + img * out_image, s, ops_.data(),
                           static_cast<int>(ops_.size()), oh0, oh1, c0, c1);
        r0 += oh1 - oh0;
      }
    };
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (int64_t t = 0; t < threads; ++t) {
      if (by_channels) {
        const int64_t c0 = std::min(s.channels, vectors * t / threads * 16);
        const int64_t c1 = std::min(s.channels, vectors * (t + 1) / threads * 16);
        if (c1 > c0) run_rows(0, rows, c0, c1);
      } else {
        run_rows(rows * t / threads, rows * (t + 1) / threads, 0, s.channels);
      }
    }
  }

  const ir::Node& node_;
  bool blocked_out_;
  std::vector<DepthwisePostOp> ops_;
  int64_t c_ = 0, kh_ = 0, kw_ = 0;
  std::vector<float> weights_, bias_;
  std::vector<int64_t> in_dims_, out_dims_;  // the geometry below is for these input dims
  DepthwiseShape shape_;
  md in_md_, out_md_;
};

Result<std::unique_ptr<Kernel>> create_depthwise_conv(const ir::Node& node, const CpuOptions& o) {
  const bool blocked = node.has_output(0) && may_produce_blocked(*node.outputs[0]);
  auto k = std::make_unique<DepthwiseConvKernel>(node, blocked);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

// Registered before register_conv: the table's first entry that supports a node takes it.
void register_depthwise_conv(KernelTable& t) {
  t.push_back({"", "Conv", depthwise_supports, create_depthwise_conv});
  t.push_back({"com.ferry", "FusedConv", depthwise_supports, create_depthwise_conv});
}

}  // namespace ferry::backends::cpu
