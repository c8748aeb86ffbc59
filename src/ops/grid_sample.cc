// GridSample: samples X [N, C, D1..Dr] at the normalised coordinates of grid [N, O1..Or, r] (last dim
// ordered x, y, z: innermost spatial dim first). Opset 16 is 2-D with modes bilinear/nearest/bicubic;
// opset 20 is N-D with linear/nearest/cubic. Coordinates are denormalised with align_corners, then
// padding_mode zeros (taps outside read 0), border (clamp) or reflection (mirror at the borders) applies.
// Nearest rounds half to even; cubic uses Keys' kernel with a = -0.75. Sampling weights multiply across
// dims (the separable form of the reference). Coordinates are computed in float, sums in double.
#include <algorithm>
#include <cmath>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
enum class Pad { kZeros, kBorder, kReflection };
enum class Mode { kNearest, kLinear, kCubic };

double reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double t, double c[4]) {
  const double a = -0.75;
  t = std::fabs(t);
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

Status grid_sample_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* grid, nn::tensor_in(ctx, 1, "grid"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  if (!is_floating(grid->dtype())) return nn::bad_dtype(ctx, *grid, "grid");
  const int r = x->rank() - 2;
  if (r < 1) return Status::invalid("GridSample: X must have rank >= 3, got " + x->describe());
  if (ctx.opset() < 20 && r != 2) return Status::invalid("GridSample: opset 16 handles 4-D X only");
  if (grid->rank() != x->rank() || grid->dim(0) != x->dim(0) || grid->dim(-1) != r)
    return Status::invalid("GridSample: grid " + grid->describe() + " must be [N, out..., " + std::to_string(r) +
                           "] for X " + x->describe());
  const std::string ms = ctx.node().attr_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  Mode mode;
  if (ms == "nearest") mode = Mode::kNearest;
  else if (ms == "linear" || ms == "bilinear") mode = Mode::kLinear;
  else if (ms == "cubic" || ms == "bicubic") mode = Mode::kCubic;
  else return Status::invalid("GridSample: unknown mode '" + ms + "'");
  if (mode == Mode::kCubic && r != 2) return Status::unsupported("GridSample: cubic mode needs 2 spatial dims");
  const std::string ps = ctx.node().attr_string("padding_mode", "zeros");
  Pad pad;
  if (ps == "zeros") pad = Pad::kZeros;
  else if (ps == "border") pad = Pad::kBorder;
  else if (ps == "reflection") pad = Pad::kReflection;
  else return Status::invalid("GridSample: unknown padding_mode '" + ps + "'");
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  const int64_t N = x->dim(0), C = x->dim(1);
  std::vector<int64_t> in(x->dims().begin() + 2, x->dims().end());
  std::vector<int64_t> out_dims = {N, C};
  for (int i = 1; i <= r; ++i) out_dims.push_back(grid->dim(i));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), out_dims));
  if (y->numel() == 0) return Status();
  for (int64_t d : in)
    if (d <= 0) return Status::invalid("GridSample: X has an empty spatial dim");
  int64_t in_plane = 1, out_plane = 1;
  for (int64_t d : in) in_plane *= d;
  for (int i = 1; i <= r; ++i) out_plane *= grid->dim(i);
  std::vector<int64_t> in_strides(r, 1);
  for (int i = r - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in[i + 1];
  std::vector<double> lo(r), hi(r);
  for (int i = 0; i < r; ++i) {
    lo[i] = align ? 0.0 : -0.5;
    hi[i] = align ? static_cast<double>(in[i] - 1) : static_cast<double>(in[i]) - 0.5;
  }
  const std::vector<double> xv = nn::to_doubles(*x), gv = nn::to_doubles(*grid);
  std::vector<double> yv(y->numel());
  const int taps = mode == Mode::kNearest ? 1 : mode == Mode::kLinear ? 2 : 4;
  std::vector<int64_t> base(r);
  std::vector<double> coeff(static_cast<size_t>(r) * 4);
  // Index of tap t on dim i after padding, or -1 for a zero tap.
  auto tap_index = [&](int i, int64_t idx) -> int64_t {
    if (idx >= 0 && idx < in[i]) return idx;
    if (pad == Pad::kZeros) return -1;
    if (pad == Pad::kBorder) return std::clamp<int64_t>(idx, 0, in[i] - 1);
    return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(idx), lo[i], hi[i])), 0, in[i] - 1);
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < out_plane; ++o) {
      const double* g = gv.data() + (n * out_plane + o) * r;
      for (int i = 0; i < r; ++i) {
        const float norm = static_cast<float>(g[r - 1 - i]);  // grid is (x, y, ...): reversed dims
        const float len = static_cast<float>(in[i]);
        float c = align ? (norm + 1) / 2.0f * (len - 1) : ((norm + 1) * len - 1) / 2.0f;
        // NaN and absurd coordinates become far-outside ones, so the integer casts below stay defined.
        double v = std::isnan(c) ? -1e12 : std::clamp(static_cast<double>(c), -1e12, 1e12);
        if (mode == Mode::kNearest) v = std::nearbyint(v);
        if (v < lo[i] || v > hi[i]) {
          if (pad == Pad::kBorder) v = std::clamp(v, 0.0, static_cast<double>(in[i] - 1));
          else if (pad == Pad::kReflection) v = static_cast<float>(reflect(v, lo[i], hi[i]));
        }
        if (mode == Mode::kNearest) {
          base[i] = static_cast<int64_t>(v);
          coeff[i * 4] = 1.0;
        } else {
          const double f = std::floor(v);
          const double t = v - f;
          if (mode == Mode::kLinear) {
            base[i] = static_cast<int64_t>(f);
            coeff[i * 4] = 1 - t;
            coeff[i * 4 + 1] = t;
          } else {
            base[i] = static_cast<int64_t>(f) - 1;
            cubic_coeffs(t, &coeff[i * 4]);
          }
        }
      }
      int64_t combos = 1;
      for (int i = 0; i < r; ++i) combos *= taps;
      for (int64_t c = 0; c < C; ++c) {
        const double* plane = xv.data() + (n * C + c) * in_plane;
        double acc = 0;
        for (int64_t k = 0; k < combos; ++k) {
          int64_t rem = k, off = 0;
          double w = 1;
          bool zero = false;
          for (int i = r - 1; i >= 0; --i) {
            const int t = static_cast<int>(rem % taps);
            rem /= taps;
            const int64_t idx = tap_index(i, base[i] + t);
            if (idx < 0) {
              zero = true;
              break;
            }
            off += idx * in_strides[i];
            w *= coeff[i * 4 + t];
          }
          if (!zero) acc += w * plane[off];
        }
        yv[(n * C + c) * out_plane + o] = acc;
      }
    }
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status grid_sample_infer(InferContext& ctx) {
  const auto* xs = ctx.input_shape(0);
  const auto* gs = ctx.input_shape(1);
  std::optional<Shape> out;
  if (xs && gs && *xs && *gs && (*gs)->size() >= 3) {
    Shape o = {(**xs).size() >= 2 ? (**xs)[0] : Dim(), (**xs).size() >= 2 ? (**xs)[1] : Dim()};
    for (size_t i = 1; i + 1 < (*gs)->size(); ++i) o.push_back((**gs)[i]);
    out = o;
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}
}  // namespace

void register_grid_sample(OpRegistry& r) {
  r.add(OpSchema{.op_type = "GridSample", .since_version = 16, .min_inputs = 2, .max_inputs = 2,
                 .infer = grid_sample_infer, .kernel = grid_sample_kernel});
}

}  // namespace ferry::ops
