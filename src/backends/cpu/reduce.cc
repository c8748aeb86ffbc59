// ReduceL2 / ReduceSumSquare / ReduceSum / ReduceMean (float32, fp32 accumulation) over
// trailing axes, one row of contiguous values per output value: torch's F.normalize (swin_v2's cosine
// attention: ReduceL2 over the last axis, 24 nodes on the reference kernel, 18% of the model).
//
// The axes come from the `axes` attribute or constant input (none: all of them, unless
// noop_with_empty_axes); they must be the trailing dims, size-1 dims between them allowed (mnasnet's
// `x.mean([2, 3])`, keepdims 0). Where the axes input is not a constant they are read from the node's
// static shapes with keepdims 1: every dim that is not 1 in X and 1 in Y (reducing a size-1 dim changes
// nothing once another dim is reduced with it). Other axes and dynamic shapes run the reference kernel.
//
// ReduceMean over every spatial axis of an N,C,... tensor reads the layout its producer wrote (nhwc,
// nChw16c: global_average.h, GlobalAveragePool's reduction): mnasnet's last 1x1 conv wrote nhwc and
// a reorder to plain (0.3 ms of 1.3 at batch 8) ran before the mean.
#include <algorithm>
#include <cmath>
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/global_average.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

enum class Reduction { kL2, kSumSquare, kSum, kMean };

std::optional<Reduction> reduction_of(const std::string& op) {
  if (op == "ReduceL2") return Reduction::kL2;
  if (op == "ReduceSumSquare") return Reduction::kSumSquare;
  if (op == "ReduceSum") return Reduction::kSum;
  if (op == "ReduceMean") return Reduction::kMean;
  return std::nullopt;
}

// From the static shapes (keepdims 1): the first reduced axis when the reduced axes are a suffix, or -1.
int first_reduced_by_shape(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in.size() != out.size() || in.empty()) return -1;
  int first = -1;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && out[i] == 1) {
      first = static_cast<int>(i);
      break;
    }
  if (first < 0) return -1;
  for (size_t i = 0; i < in.size(); ++i) {
    if (static_cast<int>(i) < first && out[i] != in[i]) return -1;
    if (static_cast<int>(i) >= first && out[i] != 1) return -1;
  }
  return first;
}

// The first reduced axis of the node when its reduced axes are the trailing dims (size-1 dims among them
// allowed), or -1 (see the top).
int first_reduced_axis(const ir::Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (n.has_attr("axes")) {
    axes = n.attr_ints("axes");
  } else if (n.has_input(1)) {
    if (!n.inputs[1]->is_constant()) return n.attr_int("keepdims", 1) == 1 ? first_reduced_by_shape(in, out) : -1;
    axes = n.inputs[1]->initializer.to_int64_vector();
  }
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0 || r == 0) return -1;
    return 0;
  }
  std::vector<bool> reduced(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r) return -1;
    reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  int first = -1;
  for (int64_t i = 0; i < r; ++i)
    if (reduced[i]) {
      first = static_cast<int>(i);
      break;
    }
  for (int64_t i = first; i < r; ++i)
    if (!reduced[i] && in[i] != 1) return -1;
  return first;
}

bool reduce_supports(const ir::Node& n, const CpuOptions& o) {
  if (!reduction_of(n.op_type) || !n.domain.empty() || !n.has_input(0) || !n.has_output(0)) return false;
  if (n.inputs[0]->dtype != DType::kFloat32 || n.outputs[0]->dtype != DType::kFloat32) return false;
  const auto& xs = n.inputs[0]->shape;
  const auto& ys = n.outputs[0]->shape;
  if (!xs || !ys || !is_static(*xs) || !is_static(*ys)) return false;
  return first_reduced_axis(n, static_dims(*xs), static_dims(*ys)) >= 0;
}

float reduce_row(Reduction r, const float* __restrict x, int64_t n) {
  float acc = 0.f;
  switch (r) {
    case Reduction::kL2:
    case Reduction::kSumSquare:
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += x[i] * x[i];
      return r == Reduction::kL2 ? std::sqrt(acc) : acc;
    case Reduction::kSum:
    case Reduction::kMean:
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += x[i];
      return r == Reduction::kMean ? acc / static_cast<float>(n) : acc;
  }
  return acc;
}

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const ir::Node& node, Reduction r) : node_(node), r_(r) {}
  std::string name() const override { return "cpu:vec:reduce"; }
  // Every reduction takes any layout: the spatial mean reads it, the others make it plain first.
  bool accepts_layouts() const override { return true; }

  Status init() {
    FERRY_ASSIGN_OR_RETURN(reference_, reference_kernel_of(node_));
    in_ = static_dims(*node_.inputs[0]->shape);
    out_ = static_dims(*node_.outputs[0]->shape);
    const int first = first_reduced_axis(node_, in_, out_);
    spatial_mean_ = r_ == Reduction::kMean && first == 2 && in_.size() >= 3;
    rows_ = inner_ = 1;
    for (size_t i = 0; i < in_.size(); ++i) (static_cast<int>(i) < first ? rows_ : inner_) *= in_[i];
    return Status();
  }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "data"));
    // Shapes other than the static ones the node was planned for: the reference kernel.
    if (x->dtype() != DType::kFloat32 || x->dims() != in_) return run_reference_on_plain(*reference_, node_, ctx);
    PixelBlocks view;
    if (spatial_mean_ && x->numel() > 0 && pixel_blocks(desc_of(*x), &view)) {
      FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_));
      global_average(static_cast<const float*>(x->raw()), view, in_[1], y->data<float>());
      return Status();
    }
    Tensor plain_x;
    if (!x->is_plain()) {
      FERRY_ASSIGN_OR_RETURN(plain_x, x->plain());
      x = &plain_x;
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_));
    const float* xd = x->data<float>();
    float* yd = y->data<float>();
    const Reduction r = r_;
    const int64_t inner = inner_;
#pragma omp parallel for schedule(static) if (rows_ * inner_ >= kSmallElementwise && rows_ > 1)
    for (int64_t row = 0; row < rows_; ++row) yd[row] = reduce_row(r, xd + row * inner, inner);
    return Status();
  }

 private:
  const ir::Node& node_;
  Reduction r_;
  const ops::OpSchema* reference_ = nullptr;
  std::vector<int64_t> in_, out_;
  int64_t rows_ = 1, inner_ = 1;
  bool spatial_mean_ = false;  // a mean over all axes after N and C
};

Result<std::unique_ptr<Kernel>> create_reduce(const ir::Node& node, const CpuOptions& o) {
  auto r = reduction_of(node.op_type);
  if (!r) return Status::unsupported(node.label() + ": not a reduction the cpu backend runs");
  auto k = std::make_unique<ReduceKernel>(node, *r);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_reduce(KernelTable& t) {
  for (const char* op : {"ReduceL2", "ReduceSumSquare", "ReduceSum", "ReduceMean"}) {
    t.push_back({"", op, reduce_supports, create_reduce});
    declare_layout_aware("", op);
  }
}

}  // namespace ferry::backends::cpu
