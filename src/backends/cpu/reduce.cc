// ReduceL2 / ReduceSumSquare / ReduceSum / ReduceMean (float32, fp32 accumulation) over one block of
// adjacent axes. Trailing axes: one row of contiguous values per output value, torch's F.normalize
// (swin_v2's cosine attention: ReduceL2 over the last axis, 24 nodes on the reference kernel, 18% of the
// model). Axes followed by others: [outer, reduced, tail] summed over the middle in slices of the tail
// (SSD's L2Norm, ReduceL2 over the channels of [N, 512, 38, 38], ran on the reference kernel); over the
// channels of a channels-last tensor, each pixel's channels are a contiguous row.
//
// The axes come from the `axes` attribute or constant input (none: all of them, unless
// noop_with_empty_axes); they must be adjacent, size-1 dims between them allowed (mnasnet's
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
#include <utility>

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

// The reduced axes of the node as one block [first, last] (size-1 dims inside or around it allowed), or
// {-1, -1} (see the top). Axes read from the static shapes (a non-constant axes input) must be trailing.
std::pair<int, int> reduced_range(const ir::Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (n.has_attr("axes")) {
    axes = n.attr_ints("axes");
  } else if (n.has_input(1)) {
    if (!n.inputs[1]->is_constant()) {
      const int first = n.attr_int("keepdims", 1) == 1 ? first_reduced_by_shape(in, out) : -1;
      return {first, first < 0 ? -1 : static_cast<int>(r) - 1};
    }
    axes = n.inputs[1]->initializer.to_int64_vector();
  }
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0 || r == 0) return {-1, -1};
    return {0, static_cast<int>(r) - 1};
  }
  std::vector<bool> reduced(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r) return {-1, -1};
    reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  int first = -1, last = -1;
  for (int64_t i = 0; i < r; ++i)
    if (reduced[i] && in[i] != 1) {
      if (first < 0) first = static_cast<int>(i);
      last = static_cast<int>(i);
    }
  if (first < 0) {  // only size-1 dims reduced: a copy, as one reduction of one element per row
    for (int64_t i = 0; i < r; ++i)
      if (reduced[i]) return {static_cast<int>(i), static_cast<int>(i)};
  }
  for (int i = first; i <= last; ++i)
    if (!reduced[i] && in[i] != 1) return {-1, -1};
  return {first, last};
}

bool reduce_supports(const ir::Node& n, const CpuOptions& o) {
  if (!reduction_of(n.op_type) || !n.domain.empty() || !n.has_input(0) || !n.has_output(0)) return false;
  if (n.inputs[0]->dtype != DType::kFloat32 || n.outputs[0]->dtype != DType::kFloat32) return false;
  const auto& xs = n.inputs[0]->shape;
  const auto& ys = n.outputs[0]->shape;
  if (!xs || !ys || !is_static(*xs) || !is_static(*ys)) return false;
  return reduced_range(n, static_dims(*xs), static_dims(*ys)).first >= 0;
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
    const auto [first, last] = reduced_range(node_, in_, out_);
    spatial_mean_ = r_ == Reduction::kMean && first == 2 && last == static_cast<int>(in_.size()) - 1 && in_.size() >= 3;
    rows_ = inner_ = tail_ = 1;
    for (size_t i = 0; i < in_.size(); ++i) {
      const int a = static_cast<int>(i);
      (a < first ? rows_ : a <= last ? inner_ : tail_) *= in_[i];
    }
    // Over the channels of a channels-last 4-D tensor (SSD's L2Norm: ReduceL2 over axis 1): each
    // pixel's channels are one contiguous row, the output [N, 1, H, W] is in pixel order.
    channels_of_nhwc_ = first == 1 && last == 1 && in_.size() == 4;
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
    if (channels_of_nhwc_ && x->numel() > 0 && desc_of(*x) == channels_last_desc(in_)) {
      FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_));
      reduce_rows(static_cast<const float*>(x->raw()), y->data<float>(), in_[0] * in_[2] * in_[3], in_[1]);
      return Status();
    }
    Tensor plain_x;
    if (!x->is_plain()) {
      FERRY_ASSIGN_OR_RETURN(plain_x, x->plain());
      x = &plain_x;
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_));
    if (tail_ == 1) reduce_rows(x->data<float>(), y->data<float>(), rows_, inner_);
    else reduce_middle(x->data<float>(), y->data<float>());
    return Status();
  }

 private:
  // y[row] = the reduction of x's row `row` of n contiguous values, rows on the threads.
  void reduce_rows(const float* xd, float* yd, int64_t rows, int64_t n) const {
    const Reduction r = r_;
#pragma omp parallel for schedule(static) if (rows * n >= kSmallElementwise && rows > 1)
    for (int64_t row = 0; row < rows; ++row) yd[row] = reduce_row(r, xd + row * n, n);
  }

  // x viewed as [rows_, inner_, tail_], reduced over the middle: each task sums a slice of kSlice tail
  // positions over inner_ rows of them (contiguous loads, one accumulator vector per position).
  void reduce_middle(const float* xd, float* yd) const {
    constexpr int64_t kSlice = 256;
    const int64_t slices = (tail_ + kSlice - 1) / kSlice, tail = tail_, inner = inner_;
    const Reduction r = r_;
    const bool squares = r == Reduction::kL2 || r == Reduction::kSumSquare;
#pragma omp parallel for schedule(static) if (rows_ * inner_ * tail_ >= kSmallElementwise && rows_ * slices > 1)
    for (int64_t task = 0; task < rows_ * slices; ++task) {
      const int64_t o = task / slices, j0 = (task % slices) * kSlice, len = std::min(kSlice, tail - j0);
      float acc[kSlice] = {};
      for (int64_t a = 0; a < inner; ++a) {
        const float* row = xd + (o * inner + a) * tail + j0;
        if (squares) {
#pragma omp simd
          for (int64_t j = 0; j < len; ++j) acc[j] += row[j] * row[j];
        } else {
#pragma omp simd
          for (int64_t j = 0; j < len; ++j) acc[j] += row[j];
        }
      }
      float* out = yd + o * tail + j0;
      for (int64_t j = 0; j < len; ++j)
        out[j] = r == Reduction::kL2 ? std::sqrt(acc[j]) : r == Reduction::kMean ? acc[j] / static_cast<float>(inner) : acc[j];
    }
  }

  const ir::Node& node_;
  Reduction r_;
  const ops::OpSchema* reference_ = nullptr;
  std::vector<int64_t> in_, out_;
  int64_t rows_ = 1, inner_ = 1, tail_ = 1;  // x as [rows_, inner_ (reduced), tail_]
  bool spatial_mean_ = false;      // a mean over all axes after N and C
  bool channels_of_nhwc_ = false;  // over axis 1 of a 4-D tensor, which may arrive channels-last
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
