// Resize / Upsample's plan (resize_plan.h): attributes, output sizes, taps per output coordinate.
#include "ops/util/resize_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/util/nn_common.h"

namespace ferry::ops::resize {

namespace {
std::vector<double> coeffs_for(const ResizeAttrs& a, double ratio, double scale) {
  if (a.mode == "nearest") {
    if (ratio == 1.0) return {0.0, 1.0};
    std::string m = a.nearest_mode;
    if (a.legacy) m = scale < 1.0 ? "ceil" : "floor";
    if (m == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (m == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (m == "floor") return {1.0, 0.0};
    return {0.0, 1.0};
  }
  if (a.mode == "linear") {
    if (!a.antialias) return {1.0 - ratio, ratio};
    const double s = std::min(scale, 1.0);
    const int64_t start = static_cast<int64_t>(std::floor(-1.0 / s) + 1);
    const int64_t footprint = 2 - 2 * start;
    std::vector<double> c(footprint);
    double sum = 0;
    for (int64_t i = 0; i < footprint; ++i) {
      c[i] = std::clamp(1.0 - std::fabs((static_cast<double>(start + i) - ratio) * s), 0.0, 1.0);
      sum += c[i];
    }
    for (double& v : c) v /= sum;
    return c;
  }
  const double A = a.cubic_a;
  if (!a.antialias) {
    const double r = ratio, q = 1 - ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * q - (A + 3)) * q * q + 1, ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
  }
  const double s = std::min(scale, 1.0);
  const int64_t i_start = static_cast<int64_t>(std::floor(-2.0 / s) + 1), i_end = 2 - i_start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = i_start; i < i_end; ++i) {
    const double x = std::fabs(s * (static_cast<double>(i) - ratio));
    double v = 0;
    if (x <= 1)
      v = (A + 2) * x * x * x - (A + 3) * x * x + 1;
    else if (x < 2)
      v = A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
    c.push_back(v);
    sum += v;
  }
  for (double& v : c) v /= sum;
  return c;
}

}  // namespace

Result<ResizeAttrs> read_attrs(const ir::Node& node, int rank) {
  ResizeAttrs a;
  const std::string& op = node.op_type;
  a.mode = node.attr_string("mode", "nearest");
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic" && a.mode != "bilinear")
    return Status::invalid(op + ": unknown mode '" + a.mode + "'");
  if (a.mode == "bilinear") a.mode = "linear";  // Upsample-7 accepted it
  if (op == "Upsample" || node.opset < 11) {
    a.legacy = true;
    a.coord = "asymmetric";
    if (a.mode == "cubic") return Status::invalid(op + ": cubic mode needs Resize opset 11+");
  } else {
    a.coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
    a.nearest_mode = node.attr_string("nearest_mode", "round_prefer_floor");
    a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
    a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = node.attr_float("extrapolation_value", 0.0f);
    static const char* kCoords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"};
    if (std::find(std::begin(kCoords), std::end(kCoords), a.coord) == std::end(kCoords))
      return Status::invalid(op + ": unknown coordinate_transformation_mode '" + a.coord + "'");
    if (a.coord == "half_pixel_symmetric" && node.opset < 19)
      return Status::invalid(op + ": half_pixel_symmetric needs opset 19");
    if (a.nearest_mode != "round_prefer_floor" && a.nearest_mode != "round_prefer_ceil" && a.nearest_mode != "floor" &&
        a.nearest_mode != "ceil")
      return Status::invalid(op + ": unknown nearest_mode '" + a.nearest_mode + "'");
    if (node.opset >= 18) {
      a.antialias = node.attr_int("antialias", 0) != 0;
      a.policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
      if (a.policy != "stretch" && a.policy != "not_larger" && a.policy != "not_smaller")
        return Status::invalid(op + ": unknown keep_aspect_ratio_policy '" + a.policy + "'");
      for (int64_t ax : node.attr_ints("axes")) {
        FERRY_ASSIGN_OR_RETURN(int64_t n, normalize_axis(ax, rank));
        if (std::find(a.axes.begin(), a.axes.end(), n) != a.axes.end())
          return Status::invalid(op + ": repeated axis " + std::to_string(ax));
        a.axes.push_back(n);
      }
    }
  }
  if (a.axes.empty())
    for (int i = 0; i < rank; ++i) a.axes.push_back(i);
  return a;
}



Result<ResizePlan> plan_resize(const std::string& op, const ResizeAttrs& a, const std::vector<int64_t>& in,
                               const std::vector<double>& scales, const std::vector<int64_t>& sizes,
                               const std::vector<double>& roi) {
  const size_t r = in.size(), na = a.axes.size();
  ResizePlan p;
  p.scales.assign(r, 1.0);
  p.out = in;
  if (!scales.empty() && !sizes.empty()) return Status::invalid(op + ": give scales or sizes, not both");
  if (!scales.empty()) {
    if (scales.size() != na)
      return Status::invalid(op + ": scales has " + std::to_string(scales.size()) + " values, expected " +
                             std::to_string(na));
    for (size_t i = 0; i < na; ++i) {
      const int64_t d = a.axes[i];
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) return Status::invalid(op + ": scales must be positive");
      p.scales[d] = scales[i];
      const double o = scales[i] * static_cast<double>(in[d]);
      if (o > 9e15) return Status::invalid(op + ": output size overflows");
      p.out[d] = static_cast<int64_t>(o);
    }
  } else if (!sizes.empty()) {
    if (sizes.size() != na)
      return Status::invalid(op + ": sizes has " + std::to_string(sizes.size()) + " values, expected " +
                             std::to_string(na));
    for (size_t i = 0; i < na; ++i) {
      const int64_t d = a.axes[i];
      if (sizes[i] < 0) return Status::invalid(op + ": sizes must not be negative");
      if (in[d] == 0) return Status::invalid(op + ": cannot resize an empty dim to a size");
      p.out[d] = sizes[i];
      p.scales[d] = static_cast<double>(sizes[i]) / static_cast<double>(in[d]);
    }
    if (a.policy != "stretch") {
      double s = a.policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t d : a.axes) s = a.policy == "not_larger" ? std::min(s, p.scales[d]) : std::max(s, p.scales[d]);
      for (int64_t d : a.axes) {
        p.scales[d] = s;
        p.out[d] = static_cast<int64_t>(s * static_cast<double>(in[d]) + 0.5);
      }
    }
  } else {
    return Status::invalid(op + ": one of scales or sizes is required");
  }
  if (a.coord == "tf_crop_and_resize") {
    if (roi.size() != 2 * na)
      return Status::invalid(op + ": tf_crop_and_resize needs roi of " + std::to_string(2 * na) + " values");
    p.roi.assign(2 * r, 0.0);
    for (size_t i = 0; i < r; ++i) p.roi[r + i] = 1.0;
    for (size_t i = 0; i < na; ++i) {
      p.roi[a.axes[i]] = roi[i];
      p.roi[r + a.axes[i]] = roi[na + i];
    }
  }
  return p;
}



Taps taps_for(const ResizeAttrs& a, int64_t y, int64_t in, int64_t out_int, double scale, const double* roi) {
  const double out_f = scale * static_cast<double>(in), yd = static_cast<double>(y);
  double x = 0;
  Taps t;
  const std::string& c = a.coord;
  if (c == "align_corners") {
    x = out_f == 1 ? 0.0 : yd * static_cast<double>(in - 1) / (out_f - 1);
  } else if (c == "asymmetric") {
    x = yd / scale;
  } else if (c == "tf_crop_and_resize") {
    const double s = roi[0], e = roi[1];
    x = out_f == 1 ? (e - s) * static_cast<double>(in - 1) / 2 : yd * (e - s) * static_cast<double>(in - 1) / (out_f - 1);
    x += s * static_cast<double>(in - 1);
    t.extrapolate = x < 0 || x > static_cast<double>(in - 1);
  } else if (c == "pytorch_half_pixel") {
    x = out_f == 1 ? -0.5 : (yd + 0.5) / scale - 0.5;
  } else if (c == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out_int) / out_f, center = static_cast<double>(in) / 2;
    x = center * (1 - adjustment) + (yd + 0.5) / scale - 0.5;
  } else if (c == "tf_half_pixel_for_nn") {  // opsets 11-17
    x = (yd + 0.5) / scale;
  } else {  // half_pixel
    x = (yd + 0.5) / scale - 0.5;
  }
  if (std::isnan(x)) {  // only from a NaN roi
    x = 0;
    t.extrapolate = true;
  }
  x = std::clamp(x, -1e12, 1e12);
  const double fl = std::floor(x);
  const double ratio = x == fl ? 1.0 : x - fl;
  t.w = coeffs_for(a, ratio, scale);
  const int64_t n = static_cast<int64_t>(t.w.size());
  const double frac = x - fl;
  int64_t offset;
  if (n % 2 == 0)
    offset = frac == 0 ? -(n / 2) : -(n / 2) + 1;
  else
    offset = frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
  const int64_t start = static_cast<int64_t>(fl) + offset;
  t.idx.resize(n);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = start + j;
    if (a.exclude_outside && (i < 0 || i >= in)) t.w[j] = 0;
    sum += t.w[j];
    t.idx[j] = std::clamp<int64_t>(i, 0, in - 1);
  }
  if (a.exclude_outside && sum != 0)
    for (double& v : t.w) v /= sum;
  return t;
}



Result<ResizeInputs> read_inputs(const KernelContext& ctx) {
  ResizeInputs in;
  const std::string& op = ctx.node().op_type;
  if (op == "Upsample") {
    if (ctx.opset() >= 9) {
      FERRY_ASSIGN_OR_RETURN(const Tensor* s, nn::tensor_in(ctx, 1, "scales"));
      in.scales = nn::to_doubles(*s);
    } else {
      for (float f : ctx.node().attr_floats("scales")) in.scales.push_back(f);
    }
    return in;
  }
  if (ctx.opset() < 11) {
    FERRY_ASSIGN_OR_RETURN(const Tensor* s, nn::tensor_in(ctx, 1, "scales"));
    in.scales = nn::to_doubles(*s);
    return in;
  }
  FERRY_ASSIGN_OR_RETURN(const Tensor* roi, nn::optional_tensor_in(ctx, 1, "roi"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* scales, nn::optional_tensor_in(ctx, 2, "scales"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* sizes, nn::optional_tensor_in(ctx, 3, "sizes"));
  if (roi) in.roi = nn::to_doubles(*roi);
  if (scales) in.scales = nn::to_doubles(*scales);
  if (sizes) {
    if (sizes->dtype() != DType::kInt64) return nn::bad_dtype(ctx, *sizes, "sizes");
    in.sizes = nn::to_int64s(*sizes);
  }
  return in;
}

std::vector<int64_t> resampled_axes(const ResizeAttrs& a, const ResizePlan& p, const std::vector<int64_t>& in) {
  std::vector<int64_t> order = a.axes;
  std::sort(order.begin(), order.end());
  std::vector<int64_t> axes;
  for (int64_t ax : order) {
    const std::array<double, 2> roi = axis_roi(p, ax);
    const bool trivial_roi = std::fabs(roi[0]) < 1e-9 && std::fabs(roi[1] - 1.0) < 1e-9;
    if (!(std::fabs(p.scales[ax] - 1.0) < 1e-9 && p.out[ax] == in[ax] && trivial_roi)) axes.push_back(ax);
  }
  return axes;
}

std::array<double, 2> axis_roi(const ResizePlan& p, int64_t ax) {
  if (p.roi.empty()) return {0.0, 1.0};
  const size_t rank = p.out.size();
  return {p.roi[ax], p.roi[ax + rank]};
}

}  // namespace ferry::ops::resize
