// Slice (fp32, opset 10+, positive steps) as a oneDNN reorder from a strided view of the input
// (offset at the starts, strides multiplied by the steps) to a dense output: torch's attention splits
// its fused QKV projection this way. Negative steps, pre-10 attributes and non-constant-type
// arguments run the reference kernel.
//
// A 4-D input in channels-last (a convolution's nhwc output) sliced along the channels only, with step
// 1, stays channels-last: one run of channels per pixel. ShuffleNet's `chunk(2, dim=1)` after each
// channel shuffle then hands the next convolution the layout it runs on. Other layouts are made plain.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "backends/cpu/strided_copy.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

bool slice_supports(const ir::Node& n, const CpuOptions& o) {
  if (n.opset < 10 || !n.has_input(0) || !n.has_input(1) || !n.has_input(2) || !n.has_output(0)) return false;
  if (n.inputs[0]->dtype != DType::kFloat32 || n.outputs[0]->dtype != DType::kFloat32) return false;
  for (int i = 1; i < n.num_inputs(); ++i)
    if (n.has_input(i) && n.inputs[i]->dtype != DType::kInt64 && n.inputs[i]->dtype != DType::kInt32) return false;
  return !n.inputs[0]->shape || (!n.inputs[0]->shape->empty() && n.inputs[0]->shape->size() <= 12);
}

std::vector<int64_t> read_ints(const Tensor& t) {
  std::vector<int64_t> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = t.dtype() == DType::kInt64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
  return v;
}

struct SlicePlan {
  md src, dst;
  std::vector<int64_t> out_dims;
  bool runs = false;  // contiguous runs: memcpy'd (oneDNN's reorder is slow on such views)
  int64_t channel_first = -1;  // >= 0: a 4-D slice of channels [channel_first, + out_dims[1]), step 1, only
  StridedView view;
  dnnl::reorder prim;
};

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const ir::Node& node) : node_(node), keep_blocked_(may_produce_blocked(*node.outputs[0])) {}
  std::string name() const override { return "cpu:onednn:slice"; }
  bool accepts_layouts() const override { return true; }

  Status init() {
    FERRY_ASSIGN_OR_RETURN(reference_, reference_kernel_of(node_));
    return Status();
  }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "data"));
    if (x->dtype() != DType::kFloat32 || x->rank() == 0) return run_reference_on_plain(*reference_, node_, ctx);
    std::vector<std::vector<int64_t>> args;  // starts, ends, axes, steps
    for (int i = 1; i <= 4; ++i) {
      if (!ctx.has_input(i)) {
        args.emplace_back();
        continue;
      }
      const Tensor& t = ctx.input(i);
      if ((t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) || t.rank() != 1 || !t.is_plain())
        return run_reference_on_plain(*reference_, node_, ctx);
      args.push_back(read_ints(t));
    }
    std::vector<int64_t> key = x->dims();
    for (const auto& a : args) {
      key.push_back(-1);  // separator
      key.insert(key.end(), a.begin(), a.end());
    }
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      auto p = make_plan(x->dims(), args);
      if (!p) return run_reference_on_plain(*reference_, node_, ctx);  // bad arguments or a negative step: the reference
      it = plans_.emplace(key, std::move(p)).first;
    }
    SlicePlan& p = *it->second;
    Tensor plain_x;
    if (!x->is_plain()) {
      if (p.channel_first >= 0 && desc_of(*x) == channels_last_desc(x->dims())) return slice_channels_last(ctx, *x, p);
      FERRY_ASSIGN_OR_RETURN(plain_x, x->plain());
      x = &plain_x;
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, p.out_dims));
    if (y->numel() == 0) return Status();
    if (p.runs) {
      strided_copy(p.view, x->data<float>(), y->data<float>());
      return Status();
    }
    p.prim.execute(stream(), {{DNNL_ARG_FROM, as_memory(*x, p.src)}, {DNNL_ARG_TO, as_memory(*y, p.dst)}});
    stream().wait();
    return Status();
  }

 private:
  // x channels-last [N, C, H, W]: each pixel's channels [first, first + count) into a channels-last result.
  Status slice_channels_last(ops::KernelContext& ctx, const Tensor& x, const SlicePlan& p) {
    const int64_t c = x.dim(1), count = p.out_dims[1], first = p.channel_first;
    const int64_t pixels = x.dim(0) * x.dim(2) * x.dim(3);
    FERRY_ASSIGN_OR_RETURN(Tensor y, new_output(ctx, 0, DType::kFloat32, p.out_dims, channels_last_desc(p.out_dims), keep_blocked_));
    const float* src = x.data<float>() + first;
    float* dst = y.data<float>();
#pragma omp parallel for schedule(static) if (pixels * count >= kSmallElementwise)
    for (int64_t px = 0; px < pixels; ++px) std::memcpy(dst + px * count, src + px * c, count * sizeof(float));
    return set_output(ctx, 0, std::move(y), keep_blocked_);
  }

  static std::unique_ptr<SlicePlan> make_plan(const std::vector<int64_t>& d, const std::vector<std::vector<int64_t>>& a) {
    const int r = static_cast<int>(d.size());
    const std::vector<int64_t>& starts = a[0];
    const std::vector<int64_t>& ends = a[1];
    std::vector<int64_t> axes = a[2], steps = a[3];
    if (starts.size() != ends.size()) return nullptr;
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size()) return nullptr;
    std::vector<int64_t> first(r, 0), step(r, 1), count = d;
    std::vector<bool> seen(r, false);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
      if (ax < 0 || ax >= r || seen[ax] || steps[i] <= 0) return nullptr;
      seen[ax] = true;
      const int64_t dim = d[ax];
      int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      first[ax] = s;
      step[ax] = steps[i];
      count[ax] = e > s ? (e - s - 1) / steps[i] + 1 : 0;
    }
    std::vector<int64_t> in_strides(r, 1);
    for (int i = r - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * d[i + 1];
    auto p = std::make_unique<SlicePlan>();
    p->out_dims = count;
    dnnl::memory::dims od(count.begin(), count.end()), os(r);
    int64_t offset = 0;
    bool empty = false;
    for (int i = 0; i < r; ++i) {
      os[i] = in_strides[i] * step[i];
      offset += first[i] * in_strides[i];
      empty = empty || count[i] == 0;
    }
    if (empty) return p;  // nothing to copy
    bool channels_only = r == 4 && step[1] == 1;
    for (int i = 0; i < r; ++i)
      if (i != 1 && (first[i] != 0 || count[i] != d[i] || step[i] != 1)) channels_only = false;
    if (channels_only) p->channel_first = first[1];
    p->view = StridedView{count, std::vector<int64_t>(os.begin(), os.end()), offset};
    p->runs = plan_strided_copy(p->view);
    if (p->runs) return p;
    try {
      p->src = md(od, dnnl::memory::data_type::f32, os);
      p->src.data.offset0 = offset;
      p->dst = plain_desc(DType::kFloat32, count);
      p->prim = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), p->src, engine(), p->dst));
    } catch (const dnnl::error&) {
      return nullptr;
    }
    return p;
  }

  const ir::Node& node_;
  const ops::OpSchema* reference_ = nullptr;
  bool keep_blocked_;  // every reader takes layouts: a channels-last slice stays channels-last
  std::map<std::vector<int64_t>, std::unique_ptr<SlicePlan>> plans_;  // by input dims and arguments
};

Result<std::unique_ptr<Kernel>> create_slice(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<SliceKernel>(node);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_slice(KernelTable& t) {
  t.push_back({"", "Slice", slice_supports, create_slice});
  declare_layout_aware("", "Slice");
}

}  // namespace ferry::backends::cpu
