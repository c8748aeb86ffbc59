// Concat (float32) in the layout its inputs arrive in, so a DenseNet block's concatenations do not send
// every convolution's result back to plain NCHW and every 1x1 convolution's input forward again.
//
// The output takes the layout of the largest input (nhwc from a brgconv, nChw16c from a Winograd
// convolution, plain from anything else) where that layout can hold every input at its offset along the
// axis: a channel-blocked layout only when each input's channel count is a whole number of blocks.
// An input already in the output's layout is copied as runs (one per outer index: a whole image in
// nchw, a pixel's channels in nhwc) by OpenMP threads; any other is a cached oneDNN reorder into its
// sub-tensor of the output. With plain inputs only, or an output nobody takes blocked, the output is
// plain.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "ops/util/nn_common.h"
#include "ops/util/post_ops.h"
#include "ops/util/tensor_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

bool concat_supports(const ir::Node& n, const CpuOptions& o) {
  // Opset 4+ (axis required), as the reference kernel.
  if (n.opset < 4 || !n.has_attr("axis")) return false;
  if (n.num_inputs() < 2 || !n.has_output(0) || n.outputs[0]->dtype != DType::kFloat32) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i) || n.inputs[i]->dtype != DType::kFloat32) return false;
    const auto& s = n.inputs[i]->shape;
    if (!s || s->empty() || s->size() > 6) return false;
  }
  return true;
}

// The oneDNN tags a convolution or pooling hands on, per rank: plain, channels-last, channel blocks.
std::vector<tag> layout_tags(int rank) {
  switch (rank) {
    case 2: return {tag::ab};
    case 3: return {tag::abc, tag::acb, tag::aBc16b, tag::aBc8b};
    case 4: return {tag::abcd, tag::acdb, tag::aBcd16b, tag::aBcd8b};
    case 5: return {tag::abcde, tag::acdeb, tag::aBcde16b, tag::aBcde8b};
    default: return {};
  }
}

// The channel block of a tag (1 for unblocked ones).
int64_t channel_block(tag t) {
  switch (t) {
    case tag::aBc16b: case tag::aBcd16b: case tag::aBcde16b: return 16;
    case tag::aBc8b: case tag::aBcd8b: case tag::aBcde8b: return 8;
    default: return 1;
  }
}

// The tag whose descriptor over `dims` is `d`, or undef.
tag tag_of(const md& d, const std::vector<int64_t>& dims) {
  for (tag t : layout_tags(static_cast<int>(dims.size())))
    if (md(dnnl::memory::dims(dims.begin(), dims.end()), d.data_type(), t) == d) return t;
  return tag::undef;
}

// An input in the output's own layout: `outer` runs of `run` floats, dense in the input, `dst_stride`
// apart in the output from `dst_offset` on.
// With axis 1, run element j is channel first_channel + (j / axis_stride) * block + j % block.
struct RunCopy {
  int64_t outer = 0, run = 0, dst_stride = 0, dst_offset = 0;
  int64_t axis_stride = 1, block = 1, first_channel = 0;
};

// FusedBatchNorm's y = act(x * scale[c] + shift[c]); act is a chain of Relu (a Clip to [0, inf)),
// LeakyRelu (slope alpha) and Clip (lo, hi).
struct Affine {
  std::vector<float> scale, shift;
  struct Act {
    bool clip = false;
    float slope = 0, lo = 0, hi = 0;
  };
  std::vector<Act> acts;
};

// Elements [j, end) of one channel block in a B-lane blocked layout (nChw16c: pixel after pixel of B
// channels): s and t are the block's B scales and shifts, the same vector for every pixel. Whole pixels
// go through a B-wide simd loop; the per-element `k % B` indexing it replaces ran the first BatchNorm of
// maxvit_t ([8, 64, 112, 112] in nChw16c) at 0.65 G elements/s.
template <int B, class First>
void affine_blocked(const float* __restrict s, const float* __restrict t, const float* __restrict src,
                    float* __restrict dst, int64_t j, int64_t end, First first) {
  int64_t k = j;
  for (; k < end && k % B != 0; ++k) dst[k] = first(src[k] * s[k % B] + t[k % B]);
  for (; k + B <= end; k += B) {
#pragma omp simd
    for (int l = 0; l < B; ++l) dst[k + l] = first(src[k + l] * s[l] + t[l]);
  }
  for (; k < end; ++k) dst[k] = first(src[k] * s[k % B] + t[k % B]);
}

// dst[j] = act(src[j] * scale[c] + shift[c]) for run elements [b, e) (see RunCopy for their channels),
// one branch-free `omp simd` loop per layout (GCC's -O2 does not vectorize loops that need a remainder);
// `first` is the chain's first activation when it is a clip (Relu), applied in the same loop.
template <class First>
void affine_loops(const RunCopy& c, const Affine& f, const float* __restrict src, float* __restrict dst, int64_t b,
                  int64_t e, First first) {
  const float* sc = f.scale.data();
  const float* sh = f.shift.data();
  if (c.axis_stride == 1 && c.block == 1) {  // channels innermost (nhwc, [N, C])
    const float* s = sc + c.first_channel;
    const float* t = sh + c.first_channel;
#pragma omp simd
    for (int64_t j = b; j < e; ++j) dst[j] = first(src[j] * s[j] + t[j]);
    return;
  }
  for (int64_t j = b; j < e;) {
    const int64_t kb = j / c.axis_stride;
    const int64_t end = std::min(e, (kb + 1) * c.axis_stride);
    const int64_t c0 = c.first_channel + kb * c.block;
    if (c.block == 1) {
      const float s = sc[c0], t = sh[c0];
#pragma omp simd
      for (int64_t k = j; k < end; ++k) dst[k] = first(src[k] * s + t);
    } else if (c.block == 16) {
      affine_blocked<16>(sc + c0, sh + c0, src, dst, j, end, first);
    } else if (c.block == 8) {
      affine_blocked<8>(sc + c0, sh + c0, src, dst, j, end, first);
    } else {
      for (int64_t k = j; k < end; ++k) dst[k] = first(src[k] * sc[c0 + k % c.block] + sh[c0 + k % c.block]);
    }
    j = end;
  }
}

// The affine map and then the activations: the first one in the map's loop when it is a clip (the
// common BN -> Relu), each other one as its own loop over the same (cached) elements.
void affine_range(const RunCopy& c, const Affine& f, const float* __restrict src, float* __restrict dst, int64_t b,
                  int64_t e) {
  size_t done = 0;
  if (!f.acts.empty() && f.acts[0].clip) {
    const float lo = f.acts[0].lo, hi = f.acts[0].hi;  // locals: no aliasing with dst for the vectorizer
    affine_loops(c, f, src, dst, b, e, [lo, hi](float v) { return std::min(std::max(v, lo), hi); });
    done = 1;
  } else {
    affine_loops(c, f, src, dst, b, e, [](float v) { return v; });
  }
  for (size_t i = done; i < f.acts.size(); ++i) {
    const Affine::Act& a = f.acts[i];
    const float lo = a.lo, hi = a.hi, slope = a.slope;
    if (a.clip) {
#pragma omp simd
      for (int64_t j = b; j < e; ++j) dst[j] = std::min(std::max(dst[j], lo), hi);
    } else {
#pragma omp simd
      for (int64_t j = b; j < e; ++j) {
        const float v = dst[j];
        dst[j] = v * (v > 0.f ? 1.f : slope);
      }
    }
  }
}

// The runs for an input of `x_dims` whose slice of the axis starts at `offset`, when it and the output
// `dst` share a dense layout `t` (the axis's stride covers everything inside it, so everything outside
// it is one linear outer index).
RunCopy run_copy(const md& dst, const std::vector<int64_t>& x_dims, tag t, int axis, int64_t offset) {
  const md src(dnnl::memory::dims(x_dims.begin(), x_dims.end()), dt::f32, t);
  const int64_t block = axis == 1 ? channel_block(t) : 1;
  const int64_t src_axis_stride = src.data.format_desc.blocking.strides[axis];
  const int64_t dst_axis_stride = dst.data.format_desc.blocking.strides[axis];
  RunCopy c;
  c.axis_stride = src_axis_stride;
  c.block = block;
  c.first_channel = offset;
  c.run = x_dims[axis] / block * src_axis_stride;
  c.outer = c.run == 0 ? 0 : static_cast<int64_t>(src.get_size() / sizeof(float)) / c.run;
  c.dst_stride = dst.data.padded_dims[axis] / block * dst_axis_stride;
  c.dst_offset = offset / block * dst_axis_stride;
  return c;
}

// One piece of the work: run elements [b, e) of outer indexes [o0, o1) of input `input`.
struct Piece {
  size_t input = 0;
  int64_t o0 = 0, o1 = 0, b = 0, e = 0;
};

// Pieces hold about this many elements; runs longer than that (nchw images) are cut.
constexpr int64_t kPiece = int64_t{1} << 14;

struct ConcatPlan {
  std::vector<md> srcs;  // the inputs' descriptors this plan is for
  md dst;
  tag dst_tag = tag::undef;
  std::vector<md> parts;        // per input: its sub-tensor of dst (for the reorder)
  std::vector<bool> as_runs;    // per input: copied as runs (same layout as dst)
  std::vector<RunCopy> runs;    // per input copied as runs, after a reorder or not (else run 0)
  std::vector<Piece> pieces;    // of every input with runs, in the order the output is written
  std::vector<int64_t> starts;  // per piece: the elements of the pieces before it
  int64_t total = 0;            // elements in all pieces
};

// The pieces of every input copied as runs, output-row-major: each group of outer indexes (a few
// pixels in nhwc) takes every input in turn, so the output is written front to back in one pass
// instead of once per input (DenseNet's concatenations have up to 49 inputs of 32 channels).
void plan_pieces(ConcatPlan& p) {
  int64_t row = 0, outer = 0;  // the output elements of one outer index, the outer indexes
  for (const RunCopy& c : p.runs)
    if (c.run > 0 && c.outer > 0) {
      row += c.run;
      outer = std::max(outer, c.outer);
    }
  if (row == 0) return;
  const int64_t rows = std::max<int64_t>(1, kPiece / row);
  for (int64_t o0 = 0; o0 < outer; o0 += rows)
    for (size_t i = 0; i < p.runs.size(); ++i) {
      const RunCopy& c = p.runs[i];
      if (c.run == 0 || o0 >= c.outer) continue;
      const int64_t o1 = std::min(c.outer, o0 + rows);
      const int64_t cuts = (c.run + kPiece - 1) / kPiece;
      const int64_t len = ((c.run + cuts - 1) / cuts + 63) / 64 * 64;  // whole vectors and channel blocks
      for (int64_t b = 0; b < c.run; b += len) {
        const int64_t e = std::min(c.run, b + len);
        p.pieces.push_back({i, o0, o1, b, e});
        p.starts.push_back(p.total);
        p.total += (o1 - o0) * (e - b);
      }
    }
}

// Copies every piece from `srcs` (per input, in the output's layout) into `dst`, through `f` when
// given: the threads take equal shares of the elements, one fork for all inputs; small ones one thread.
void copy_pieces(const ConcatPlan& p, const std::vector<const float*>& srcs, float* dst, const Affine* f) {
  auto copy_share = [&](int64_t lo, int64_t hi) {  // the pieces that start in [lo, hi)
    size_t k = static_cast<size_t>(std::lower_bound(p.starts.begin(), p.starts.end(), lo) - p.starts.begin());
    for (; k < p.pieces.size() && p.starts[k] < hi; ++k) {
      const Piece& pc = p.pieces[k];
      const RunCopy& c = p.runs[pc.input];
      for (int64_t o = pc.o0; o < pc.o1; ++o) {
        const float* x = srcs[pc.input] + o * c.run;
        float* d = dst + c.dst_offset + o * c.dst_stride;
        if (f) affine_range(c, *f, x, d, pc.b, pc.e);
        else std::memcpy(d + pc.b, x + pc.b, (pc.e - pc.b) * sizeof(float));
      }
    }
  };
  if (p.total < kSmallElementwise) return copy_share(0, p.total);
#pragma omp parallel
  {
    const int64_t n = omp_get_num_threads(), t = omp_get_thread_num();
    copy_share(p.total * t / n, p.total * (t + 1) / n);
  }
}


class ConcatKernel : public Kernel {
 public:
  ConcatKernel(const ir::Node& node, bool blocked_out, std::optional<Affine> affine)
      : node_(node), blocked_out_(blocked_out), affine_(std::move(affine)) {}
  std::string name() const override { return affine_ ? "cpu:vec:fused_batch_norm" : "cpu:onednn:concat"; }
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    std::vector<const Tensor*> xs;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, i, "inputs"));
      if (x->dtype() != DType::kFloat32) return Status::invalid(op + ": the cpu kernel takes float32 inputs");
      xs.push_back(x);
    }
    FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims, output_dims(xs));
    FERRY_ASSIGN_OR_RETURN(const ConcatPlan* p, plan_for(xs, out_dims));
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, out_dims, p->dst, blocked_out_));
    if (affine_ && out_dims[1] != static_cast<int64_t>(affine_->scale.size()))
      return Status::invalid(op + ": bn_scale holds " + std::to_string(affine_->scale.size()) + " values for " +
                             std::to_string(out_dims[1]) + " channels");
    const Affine* f = affine_ ? &*affine_ : nullptr;
    std::vector<const float*> srcs(xs.size(), nullptr);
    std::vector<Tensor> reordered;  // inputs brought into the output's layout for the affine map
    reordered.reserve(xs.size());
    try {
      for (size_t i = 0; i < xs.size(); ++i) {
        if (xs[i]->numel() == 0) continue;
        if (p->as_runs[i]) {
          srcs[i] = xs[i]->data<float>();
        } else if (f) {
          const md same(dnnl::memory::dims(xs[i]->dims().begin(), xs[i]->dims().end()), dt::f32, p->dst_tag);
          FERRY_ASSIGN_OR_RETURN(Tensor x, reorder_to(*xs[i], same));
          reordered.push_back(std::move(x));
          srcs[i] = reordered.back().data<float>();
        } else {
          reorder(as_memory(*xs[i], p->srcs[i]), as_memory(dst, p->parts[i]));
        }
      }
    } catch (const dnnl::error& e) {
      return Status::internal(op + ": oneDNN reorder failed: " + e.what());
    }
    copy_pieces(*p, srcs, dst.data<float>(), f);
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  // The concatenated dims (Concat's own check: ops/util/tensor_common.h), and the axis made non-negative.
  Result<std::vector<int64_t>> output_dims(const std::vector<const Tensor*>& xs) {
    const int64_t axis = node_.attr_int("axis", 0);
    auto dims = ops::tensor_ops::concat_dims(xs, axis);
    if (!dims.ok()) return dims.status().with_context(node_.op_type);
    axis_ = static_cast<int>(axis < 0 ? axis + xs[0]->rank() : axis);
    return dims;
  }

  // The output's layout: the largest input's, where it can hold every input (see the top).
  md choose_dst(const std::vector<const Tensor*>& xs, const std::vector<int64_t>& out_dims) const {
    const md plain = plain_desc(DType::kFloat32, out_dims);
    if (!blocked_out_) return plain;
    const Tensor* largest = nullptr;
    for (const Tensor* x : xs)
      if (!x->is_plain() && !stores_bf16(*x) && (!largest || x->numel() > largest->numel())) largest = x;
    if (!largest) return plain;
    const tag t = tag_of(desc_of(*largest), largest->dims());
    if (t == tag::undef) return plain;
    const int64_t block = channel_block(t);
    if (block > 1 && axis_ == 1)
      for (const Tensor* x : xs)
        if (x->dim(1) % block != 0) return plain;
    return md(dnnl::memory::dims(out_dims.begin(), out_dims.end()), dt::f32, t);
  }

  Result<const ConcatPlan*> plan_for(const std::vector<const Tensor*>& xs, const std::vector<int64_t>& out_dims) {
    std::vector<md> srcs;
    for (const Tensor* x : xs) srcs.push_back(desc_of(*x));
    for (const auto& p : plans_)
      if (p->srcs == srcs) return p.get();  // the inputs' descriptors fix the output's dims too
    auto plan = std::make_unique<ConcatPlan>();
    plan->srcs = std::move(srcs);
    plan->dst = choose_dst(xs, out_dims);
    const tag dst_tag = tag_of(plan->dst, out_dims);
    plan->dst_tag = dst_tag;
    if (affine_ && dst_tag == tag::undef)
      return Status::internal(node_.op_type + ": no layout tag for the output " + describe_desc(plan->dst));
    dnnl::memory::dims offsets(out_dims.size(), 0);
    try {
      for (size_t i = 0; i < xs.size(); ++i) {
        const Tensor& x = *xs[i];
        const bool runs = dst_tag != tag::undef && tag_of(plan->srcs[i], x.dims()) == dst_tag;
        plan->as_runs.push_back(runs);
        const bool runs_after_reorder = runs || (affine_ && x.numel() > 0);
        plan->runs.push_back(runs_after_reorder ? run_copy(plan->dst, x.dims(), dst_tag, axis_, offsets[axis_]) : RunCopy{});
        plan->parts.push_back(runs_after_reorder || x.numel() == 0 ? md()
                                                     : plan->dst.submemory_desc(
                                                           dnnl::memory::dims(x.dims().begin(), x.dims().end()), offsets));
        offsets[axis_] += x.dim(axis_);
      }
    } catch (const dnnl::error& e) {
      return Status::internal(node_.op_type + ": no sub-tensor of the output for an input: " + e.what());
    }
    plan_pieces(*plan);
    plans_.push_back(std::move(plan));
    return plans_.back().get();
  }

  const ir::Node& node_;
  bool blocked_out_;
  std::optional<Affine> affine_;  // FusedBatchNorm's
  int axis_ = 0;
  std::vector<std::unique_ptr<ConcatPlan>> plans_;  // by the inputs' descriptors
};

Result<std::unique_ptr<Kernel>> create_concat(const ir::Node& node, const CpuOptions& o) {
  return std::unique_ptr<Kernel>(new ConcatKernel(node, may_produce_blocked(*node.outputs[0]), std::nullopt));
}

// The scale, shift and activations of a FusedBatchNorm node, or nullopt when its chain holds another
// post-op (the reference kernel runs those).
std::optional<Affine> affine_of(const ir::Node& n) {
  auto post = ops::read_post_ops(n);
  if (!post.ok()) return std::nullopt;
  Affine f{n.attr_floats("bn_scale"), n.attr_floats("bn_shift"), {}};
  for (const ops::PostOp& p : *post) {
    if (p.name == "Relu") f.acts.push_back({true, 0.f, 0.f, std::numeric_limits<float>::infinity()});  // vectorizes
    else if (p.name == "LeakyRelu") f.acts.push_back({false, p.alpha});
    else if (p.name == "Clip") f.acts.push_back({true, 0.f, p.alpha, p.beta});
    else return std::nullopt;
  }
  if (f.scale.empty() || f.scale.size() != f.shift.size()) return std::nullopt;
  return f;
}

bool fused_batch_norm_supports(const ir::Node& n, const CpuOptions& o) {
  if (n.attr_int("axis", 0) != 1 || !affine_of(n)) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i) || n.inputs[i]->dtype != DType::kFloat32) return false;
    const auto& s = n.inputs[i]->shape;
    if (!s || s->size() < 2 || s->size() > 5) return false;  // ranks with layout tags
  }
  return n.num_inputs() >= 1 && n.has_output(0) && n.outputs[0]->dtype == DType::kFloat32;
}

Result<std::unique_ptr<Kernel>> create_fused_batch_norm(const ir::Node& node, const CpuOptions& o) {
  std::optional<Affine> f = affine_of(node);
  if (!f) return Status::unsupported(node.label() + ": the cpu kernel has no such post-op chain");
  return std::unique_ptr<Kernel>(new ConcatKernel(node, may_produce_blocked(*node.outputs[0]), std::move(f)));
}

}  // namespace

void register_concat(KernelTable& t) {
  t.push_back({"", "Concat", concat_supports, create_concat});
  t.push_back({"com.ferry", "FusedBatchNorm", fused_batch_norm_supports, create_fused_batch_norm});
  declare_layout_aware("", "Concat");
  declare_layout_aware("com.ferry", "FusedBatchNorm");
}

}  // namespace ferry::backends::cpu
