// com.ferry ChannelShuffle (float32) in the layout the tensor arrives in: Y[n, j * g + i] = X[n, i * (C / g) + j].
//
// Plain (NCHW): whole planes copied in the shuffled order. Channels-last (a brgconv's nhwc output, or any
// other oneDNN layout of a 4-D tensor, reordered to nhwc first): each pixel's channels interleaved, the
// result nhwc again, so the convolutions around a ShuffleNet unit keep their layout. The three nodes it
// replaces (passes/recognize_channel_shuffle.cc) made the tensor plain, transposed a 5-D view and had
// the next convolution reorder it back: 0.125 ms per shuffle of a 116 x 14 x 14 map on AMD Zen 4, for
// about 180 KB of data.
#include <cstring>
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/small_work.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

bool channel_shuffle_supports(const ir::Node& n, const CpuOptions&) {
  if (!n.has_input(0) || !n.has_output(0) || n.attr_int("groups", 0) < 1) return false;
  if (n.inputs[0]->dtype != DType::kFloat32 || n.outputs[0]->dtype != DType::kFloat32) return false;
  const auto& s = n.inputs[0]->shape;
  return !s || s->size() >= 2;
}

// Plain: plane (n, c_out) of `inner` floats comes from plane (n, c_in).
void shuffle_planes(const float* x, float* y, int64_t n, int64_t c, int64_t g, int64_t inner) {
  const int64_t per = c / g;
#pragma omp parallel for collapse(2) schedule(static) if (n * c * inner >= kSmallElementwise)
  for (int64_t b = 0; b < n; ++b)
    for (int64_t co = 0; co < c; ++co) {
      const int64_t j = co / g, i = co % g;
      std::memcpy(y + (b * c + co) * inner, x + (b * c + i * per + j) * inner, inner * sizeof(float));
    }
}

// Channels-last: `pixels` rows of c channels, each row interleaved.
void shuffle_pixels(const float* x, float* y, int64_t pixels, int64_t c, int64_t g) {
  const int64_t per = c / g;
#pragma omp parallel for schedule(static) if (pixels * c >= kSmallElementwise)
  for (int64_t p = 0; p < pixels; ++p) {
    const float* xr = x + p * c;
    float* yr = y + p * c;
    for (int64_t i = 0; i < g; ++i) {
      const float* src = xr + i * per;
#pragma omp simd
      for (int64_t j = 0; j < per; ++j) yr[j * g + i] = src[j];
    }
  }
}

class ChannelShuffleKernel : public Kernel {
 public:
  explicit ChannelShuffleKernel(const ir::Node& node)
      : node_(node), groups_(node.attr_int("groups", 1)), keep_blocked_(may_produce_blocked(*node.outputs[0])) {}
  std::string name() const override { return "cpu:vec:channel_shuffle"; }
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    const std::vector<int64_t>& d = x->dims();
    if (x->dtype() != DType::kFloat32 || d.size() < 2 || d[1] % groups_ != 0)
      return Status::invalid(node_.label() + ": X " + x->describe() + " does not split into " +
                             std::to_string(groups_) + " channel groups");
    int64_t inner = 1;
    for (size_t i = 2; i < d.size(); ++i) inner *= d[i];
    if (!x->is_plain() && d.size() == 4) {
      const md cl = channels_last_desc(d);
      FERRY_ASSIGN_OR_RETURN(Tensor nhwc, reorder_to(*x, cl));  // x itself when it is channels-last
      FERRY_ASSIGN_OR_RETURN(Tensor y, new_output(ctx, 0, DType::kFloat32, d, cl, keep_blocked_));
      shuffle_pixels(nhwc.data<float>(), y.data<float>(), d[0] * inner, d[1], groups_);
      return set_output(ctx, 0, std::move(y), keep_blocked_);
    }
    Tensor plain_x;
    if (!x->is_plain()) {
      FERRY_ASSIGN_OR_RETURN(plain_x, x->plain());
      x = &plain_x;
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, d));
    shuffle_planes(x->data<float>(), y->data<float>(), d[0], d[1], groups_, inner);
    return Status();
  }

 private:
  const ir::Node& node_;
  int64_t groups_;
  bool keep_blocked_;
};

Result<std::unique_ptr<Kernel>> create_channel_shuffle(const ir::Node& node, const CpuOptions&) {
  return std::unique_ptr<Kernel>(new ChannelShuffleKernel(node));
}

}  // namespace

void register_channel_shuffle(KernelTable& t) {
  t.push_back({"com.ferry", "ChannelShuffle", channel_shuffle_supports, create_channel_shuffle});
  declare_layout_aware("com.ferry", "ChannelShuffle");
}

}  // namespace ferry::backends::cpu
