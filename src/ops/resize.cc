// Resize (opsets 10-19) and the deprecated Upsample (7-9). Interpolation is separable, so the kernel
// resamples one axis at a time in double, as the ONNX reference does: each output coordinate maps to a
// source coordinate (coordinate_transformation_mode), which gets a few taps with weights (nearest with
// nearest_mode, linear, cubic with cubic_coeff_a; antialias widens linear/cubic filters when
// downsampling; exclude_outside drops taps outside the input and renormalises; taps are clamped to the
// edge; tf_crop_and_resize writes extrapolation_value outside the roi). Output sizes come from scales
// (floor(in * scale)) or sizes (with keep_aspect_ratio_policy), optionally on a subset of axes.
// Resize-10 and Upsample use asymmetric coordinates and, for nearest, floor when upsampling and ceil
// when downsampling (ONNX Runtime's legacy rule); the reference only covers integer upsampling there.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/util/nn_common.h"
#include "ops/util/resize_plan.h"

namespace ferry::ops {

namespace {

using resize::ResizeAttrs;
using resize::ResizeInputs;
using resize::ResizePlan;
using resize::Taps;

// Resamples `data` (dims) along axis ax to `out` elements.
std::vector<double> resample_axis(const std::vector<double>& data, std::vector<int64_t>& dims, int64_t ax, int64_t out,
                                  double scale, const ResizeAttrs& a, const double* roi) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= dims[i];
  for (size_t i = ax + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t in = dims[ax];
  // The caller checked the size of this intermediate (see resize_kernel).
  std::vector<double> res(static_cast<size_t>(outer * out * inner), 0.0);
  for (int64_t y = 0; y < out; ++y) {
    const Taps t = resize::taps_for(a, y, in, out, scale, roi);
    for (int64_t o = 0; o < outer; ++o) {
      double* dst = res.data() + (o * out + y) * inner;
      if (t.extrapolate) {
        std::fill_n(dst, inner, a.extrapolation);
        continue;
      }
      for (size_t j = 0; j < t.idx.size(); ++j) {
        const double w = t.w[j];
        const double* src = data.data() + (o * in + t.idx[j]) * inner;
        for (int64_t r = 0; r < inner; ++r) dst[r] += w * src[r];
      }
    }
  }
  dims[ax] = out;
  return res;
}

Status resize_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  if (x->dtype() == DType::kBool) return nn::bad_dtype(ctx, *x, "X");
  const std::string& op = ctx.node().op_type;
  FERRY_ASSIGN_OR_RETURN(ResizeAttrs a, resize::read_attrs(ctx.node(), x->rank()));
  FERRY_ASSIGN_OR_RETURN(ResizeInputs ri, resize::read_inputs(ctx));
  FERRY_ASSIGN_OR_RETURN(ResizePlan p, resize::plan_resize(op, a, x->dims(), ri.scales, ri.sizes, ri.roi));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), p.out));
  if (y->numel() == 0) return Status();
  if (x->numel() == 0) return Status::invalid(op + ": cannot resize an empty tensor to a non-empty one");
  std::vector<double> data = nn::to_doubles(*x);
  std::vector<int64_t> dims = x->dims();
  // Each changed axis in turn (an untouched axis's size never changes, so the plan's view of it holds).
  for (int64_t ax : resize::resampled_axes(a, p, x->dims())) {
    const std::array<double, 2> roi_ax = resize::axis_roi(p, ax);
    std::vector<int64_t> next = dims;
    next[ax] = p.out[ax];
    FERRY_ASSIGN_OR_RETURN(int64_t n_next, checked_numel(next));
    if (n_next > max_tensor_bytes() / 8) return Status::invalid(op + ": intermediate resize result is too large");
    data = resample_axis(data, dims, ax, p.out[ax], p.scales[ax], a, roi_ax.data());
  }
  // Saturating cast back: integers round half to even and clip, floats clip to the finite range.
  if (is_floating(x->dtype())) {
    const double hi = x->dtype() == DType::kFloat16   ? 65504.0
                      : x->dtype() == DType::kFloat64 ? std::numeric_limits<double>::max()
                                                      : std::numeric_limits<float>::max();
    for (double& v : data)
      if (!std::isnan(v)) v = std::clamp(v, -hi, hi);
    nn::store_doubles(*y, data.data());
  } else {
    std::vector<int64_t> q(data.size());
    const bool wide = x->dtype() == DType::kInt64 || x->dtype() == DType::kUInt64;
    for (size_t i = 0; i < data.size(); ++i)
      q[i] = !wide                   ? nn::saturate_round(data[i], x->dtype())
             : std::isnan(data[i])     ? 0
             : x->dtype() == DType::kUInt64 ? static_cast<int64_t>(static_cast<uint64_t>(std::clamp(std::nearbyint(data[i]), 0.0, 1.8e19)))
                                       : static_cast<int64_t>(std::clamp(std::nearbyint(data[i]), -9.2e18, 9.2e18));
    nn::store_int64s(*y, q.data());
  }
  return Status();
}

Status resize_infer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const ir::Value* x = ctx.input(0);
  if (!x || !x->shape) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const Shape& xs = *x->shape;
  const std::string& op = ctx.node().op_type;
  auto attrs = resize::read_attrs(ctx.node(), static_cast<int>(xs.size()));
  if (!attrs.ok()) return attrs.status();
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  bool known = true;
  if (op == "Upsample" && ctx.opset() < 9) {
    for (float f : ctx.node().attr_floats("scales")) scales.push_back(f);
  } else if (op == "Upsample" || ctx.opset() < 11) {
    const Tensor* s = ctx.input_constant(1);
    if (s) scales = nn::to_doubles(*s); else known = false;
  } else {
    if (ctx.has_input(2)) {
      const Tensor* s = ctx.input_constant(2);
      if (s) scales = nn::to_doubles(*s); else known = false;
    }
    if (ctx.has_input(3)) {
      const Tensor* s = ctx.input_constant(3);
      if (s) sizes = nn::to_int64s(*s); else known = false;
    }
    if (ctx.has_input(1) && attrs->coord == "tf_crop_and_resize") {
      const Tensor* s = ctx.input_constant(1);
      if (s) roi = nn::to_doubles(*s); else known = false;
    }
  }
  Shape out(xs.size());
  if (known && is_static(xs)) {
    auto p = resize::plan_resize(op, *attrs, static_dims(xs), scales, sizes, roi);
    if (p.ok()) out = to_shape(p->out);
  } else {
    // Dims the op does not resize keep their size.
    for (size_t i = 0; i < xs.size(); ++i)
      if (std::find(attrs->axes.begin(), attrs->axes.end(), static_cast<int64_t>(i)) == attrs->axes.end()) out[i] = xs[i];
  }
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_resize(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Resize", .since_version = 10, .min_inputs = 1, .max_inputs = 4,
                 .infer = resize_infer, .kernel = resize_kernel});
  r.add(OpSchema{.op_type = "Upsample", .since_version = 7, .until_version = 9, .min_inputs = 1, .max_inputs = 2,
                 .infer = resize_infer, .kernel = resize_kernel});
}

}  // namespace ferry::ops
