// RoiAlign: for each roi (x1, y1, x2, y2 in input coordinates times spatial_scale) and channel, an
// output_height x output_width grid of bins, each the average (or max) of bilinear samples on a
// sampling_ratio (or adaptive ceil(bin size)) sub-grid. half_pixel (opset 16 default) shifts by -0.5;
// output_half_pixel (opset 10 behaviour) forces rois to at least 1x1. Max mode takes the max of the
// weighted corner values, as ONNX Runtime and the ONNX reference do.
#include <algorithm>
#include <cmath>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  // Written so that NaN coordinates also give an empty sample.
  if (!(y >= -1.0 && y <= static_cast<double>(height) && x >= -1.0 && x <= static_cast<double>(width))) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_low * width + x_low;
  s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low;
  s.pos[3] = y_high * width + x_high;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

Status roi_align_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* rois, nn::tensor_in(ctx, 1, "rois"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* bidx, nn::tensor_in(ctx, 2, "batch_indices"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  if (rois->dtype() != x->dtype()) return Status::invalid("RoiAlign: rois must have X's type");
  if (!is_integer(bidx->dtype())) return nn::bad_dtype(ctx, *bidx, "batch_indices");
  if (x->rank() != 4) return Status::invalid("RoiAlign: X must be 4-D, got " + x->describe());
  if (rois->rank() != 2 || rois->dim(1) != 4) return Status::invalid("RoiAlign: rois must be [num_rois, 4]");
  if (bidx->rank() != 1 || bidx->dim(0) != rois->dim(0))
    return Status::invalid("RoiAlign: batch_indices must be [num_rois]");
  const ir::Node& node = ctx.node();
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return Status::invalid("RoiAlign: mode must be avg or max");
  const std::string coord =
      ctx.opset() >= 16 ? node.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (coord != "half_pixel" && coord != "output_half_pixel")
    return Status::invalid("RoiAlign: unknown coordinate_transformation_mode '" + coord + "'");
  const int64_t ph_n = node.attr_int("output_height", 1), pw_n = node.attr_int("output_width", 1);
  const int64_t sampling = node.attr_int("sampling_ratio", 0);
  const double spatial_scale = node.attr_float("spatial_scale", 1.0f);
  if (ph_n <= 0 || pw_n <= 0 || ph_n > (1 << 16) || pw_n > (1 << 16))
    return Status::invalid("RoiAlign: output_height/width must be in [1, 65536]");
  if (sampling < 0) return Status::invalid("RoiAlign: sampling_ratio must not be negative");
  const int64_t R = rois->dim(0), N = x->dim(0), C = x->dim(1), H = x->dim(2), W = x->dim(3);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), {R, C, ph_n, pw_n}));
  const std::vector<double> xv = nn::to_doubles(*x), rv = nn::to_doubles(*rois);
  const std::vector<int64_t> bv = nn::to_int64s(*bidx);
  std::vector<double> yv(y->numel(), 0.0);
  const bool half_pixel = coord == "half_pixel";
  for (int64_t n = 0; n < R; ++n) {
    const int64_t b = bv[n];
    if (b < 0 || b >= N)
      return Status::invalid("RoiAlign: batch index " + std::to_string(b) + " of roi " + std::to_string(n) +
                             " is out of range [0, " + std::to_string(N) + ")");
    const double off = half_pixel ? 0.5 : 0.0;
    const double sw = rv[n * 4 + 0] * spatial_scale - off, sh = rv[n * 4 + 1] * spatial_scale - off;
    const double ew = rv[n * 4 + 2] * spatial_scale - off, eh = rv[n * 4 + 3] * spatial_scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(ph_n), bw = rw / static_cast<double>(pw_n);
    const double gh_d = sampling > 0 ? static_cast<double>(sampling) : std::ceil(rh / static_cast<double>(ph_n));
    const double gw_d = sampling > 0 ? static_cast<double>(sampling) : std::ceil(rw / static_cast<double>(pw_n));
    // A negative size gives an empty sub-grid (the bin then averages nothing); NaN or huge rois are errors.
    if (!(gh_d <= 4096) || !(gw_d <= 4096) || ph_n * pw_n > (int64_t{1} << 24))
      return Status::invalid("RoiAlign: roi " + std::to_string(n) + " needs too many samples");
    const int64_t gh = static_cast<int64_t>(std::max(0.0, gh_d)), gw = static_cast<int64_t>(std::max(0.0, gw_d));
    if (ph_n * pw_n * gh * gw > (int64_t{1} << 28))
      return Status::invalid("RoiAlign: roi " + std::to_string(n) + " needs too many samples");
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    std::vector<Sample> samples;
    samples.reserve(static_cast<size_t>(std::max<int64_t>(0, ph_n * pw_n * gh * gw)));
    for (int64_t ph = 0; ph < ph_n; ++ph)
      for (int64_t pw = 0; pw < pw_n; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            const double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
            samples.push_back(bilinear_sample(yy, xx, H, W));
          }
        }
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = xv.data() + (b * C + c) * H * W;
      size_t si = 0;
      for (int64_t ph = 0; ph < ph_n; ++ph)
        for (int64_t pw = 0; pw < pw_n; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t k = 0; k < gh * gw; ++k, ++si) {
            const Sample& s = samples[si];
            if (mode == "avg") {
              for (int j = 0; j < 4; ++j) acc += s.w[j] * plane[s.pos[j]];
            } else {
              double v = s.w[0] * plane[s.pos[0]];
              for (int j = 1; j < 4; ++j) v = std::max(v, s.w[j] * plane[s.pos[j]]);
              acc = first ? v : std::max(acc, v);
              first = false;
            }
          }
          if (mode == "avg") acc /= count;
          yv[((n * C + c) * ph_n + ph) * pw_n + pw] = acc;
        }
    }
  }
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status roi_align_infer(InferContext& ctx) {
  Shape out(4);
  const auto* rs = ctx.input_shape(1);
  const auto* xs = ctx.input_shape(0);
  if (rs && *rs && (*rs)->size() == 2) out[0] = (**rs)[0];
  if (xs && *xs && (*xs)->size() == 4) out[1] = (**xs)[1];
  out[2] = Dim(ctx.node().attr_int("output_height", 1));
  out[3] = Dim(ctx.node().attr_int("output_width", 1));
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}
}  // namespace

void register_roi_align(OpRegistry& r) {
  r.add(OpSchema{.op_type = "RoiAlign", .since_version = 10, .min_inputs = 3, .max_inputs = 3,
                 .infer = roi_align_infer, .kernel = roi_align_kernel});
}

}  // namespace ferry::ops
