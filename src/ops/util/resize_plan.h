// Resize / Upsample's plan, shared by the reference kernel (ops/resize.cc) and the cpu backend's: the
// attributes, the output size and scales per dim, and for each output coordinate of an axis its input
// taps and weights (coordinate_transformation_mode, nearest_mode, linear / cubic, antialias,
// exclude_outside, extrapolation), so both compute the same interpolation.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops::resize {

struct ResizeAttrs {
  std::string mode = "nearest", coord = "half_pixel", nearest_mode = "round_prefer_floor", policy = "stretch";
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false, antialias = false, legacy = false;  // legacy: Resize-10 / Upsample
  std::vector<int64_t> axes;
};

Result<ResizeAttrs> read_attrs(const ir::Node& node, int rank);

struct ResizePlan {
  std::vector<double> scales;    // per dim of X
  std::vector<int64_t> out;      // per dim of X
  std::vector<double> roi;       // 2 * rank (start..., end...), empty when unused
};

// scales/sizes/roi: the inputs' values (empty when absent).
Result<ResizePlan> plan_resize(const std::string& op, const ResizeAttrs& a, const std::vector<int64_t>& in,
                               const std::vector<double>& scales, const std::vector<int64_t>& sizes,
                               const std::vector<double>& roi);

// The axes a plan changes (scale, size or roi other than the identity), in increasing order; the others
// are copied as they are.
std::vector<int64_t> resampled_axes(const ResizeAttrs& a, const ResizePlan& p, const std::vector<int64_t>& in);

// Axis ax's roi as (start, end): the plan's for tf_crop_and_resize, else (0, 1).
std::array<double, 2> axis_roi(const ResizePlan& p, int64_t ax);

// Filter taps for one output coordinate.
struct Taps {
  std::vector<int64_t> idx;
  std::vector<double> w;
  bool extrapolate = false;
};

// The taps of output coordinate y of an axis of `in` elements resized to `out_int` at `scale`; `roi`
// is the axis's (start, end) for tf_crop_and_resize.
Taps taps_for(const ResizeAttrs& a, int64_t y, int64_t in, int64_t out_int, double scale, const double* roi);

// Gathers the scales / sizes / roi inputs for the op version at hand.
struct ResizeInputs {
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
};

Result<ResizeInputs> read_inputs(const KernelContext& ctx);

}  // namespace ferry::ops::resize
