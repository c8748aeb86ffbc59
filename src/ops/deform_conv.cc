// DeformConv (2-D): a convolution whose taps are shifted by learned offsets and scaled by an optional
// mask. Tap (kh, kw) of output (i, j) samples X bilinearly at
//   (i * stride_h - pad_top + kh * dilation_h + off_h, j * stride_w - pad_left + kw * dilation_w + off_w),
// reading zero outside X. offset is [N, offset_group * kH * kW * 2, oH, oW] ((dh, dw) per tap), mask
// [N, offset_group * kH * kW, oH, oW]. Accumulates in double.
#include <cmath>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
double bilinear_zero(const double* plane, int64_t H, int64_t W, double y, double x) {
  if (!(y > -2.0 && y < static_cast<double>(H) + 1 && x > -2.0 && x < static_cast<double>(W) + 1)) return 0.0;
  const double fy = std::floor(y), fx = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
  const double ty = y - fy, tx = x - fx;
  double acc = 0;
  for (int dy = 0; dy < 2; ++dy) {
    const int64_t yy = y0 + dy;
    if (yy < 0 || yy >= H) continue;
    const double wy = dy ? ty : 1 - ty;
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t xx = x0 + dx;
      if (xx < 0 || xx >= W) continue;
      acc += wy * (dx ? tx : 1 - tx) * plane[yy * W + xx];
    }
  }
  return acc;
}

Status deform_conv_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* w, nn::tensor_in(ctx, 1, "W"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* offset, nn::tensor_in(ctx, 2, "offset"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::optional_tensor_in(ctx, 3, "B"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* mask, nn::optional_tensor_in(ctx, 4, "mask"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  for (const Tensor* t : {w, offset, b, mask})
    if (t && t->dtype() != x->dtype()) return Status::invalid("DeformConv: all inputs must have X's type");
  if (x->rank() != 4 || w->rank() != 4)
    return Status::unsupported("DeformConv: the reference kernel handles 2-D (4-D X and W) only, got X " +
                               x->describe());
  const ir::Node& node = ctx.node();
  const int64_t N = x->dim(0), C = x->dim(1), H = x->dim(2), Wd = x->dim(3), M = w->dim(0);
  const int64_t group = node.attr_int("group", 1), og = node.attr_int("offset_group", 1);
  if (group <= 0 || og <= 0) return Status::invalid("DeformConv: group and offset_group must be positive");
  if (C != w->dim(1) * group || M % group != 0)
    return Status::invalid("DeformConv: W " + w->describe() + " does not match X " + x->describe() + " with group " +
                           std::to_string(group));
  if (C % og != 0) return Status::invalid("DeformConv: channels not divisible by offset_group");
  const int64_t KH = w->dim(2), KW = w->dim(3);
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != std::vector<int64_t>{KH, KW})
    return Status::invalid("DeformConv: kernel_shape attribute differs from W's spatial dims");
  FERRY_ASSIGN_OR_RETURN(nn::WindowGeom g, nn::window_geometry(node, {H, Wd}, {KH, KW}, nn::WindowOptions{}));
  const int64_t OH = g.out[0], OW = g.out[1];
  if (offset->dims() != std::vector<int64_t>{N, og * KH * KW * 2, OH, OW})
    return Status::invalid("DeformConv: offset " + offset->describe() + " must be [" + std::to_string(N) + "," +
                           std::to_string(og * KH * KW * 2) + "," + std::to_string(OH) + "," + std::to_string(OW) + "]");
  if (mask && mask->dims() != std::vector<int64_t>{N, og * KH * KW, OH, OW})
    return Status::invalid("DeformConv: mask " + mask->describe() + " has the wrong shape");
  if (b && !(b->rank() == 1 && b->numel() == M))
    return Status::invalid("DeformConv: B must be a 1-D tensor of " + std::to_string(M) + " values");
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), {N, M, OH, OW}));
  const std::vector<double> xv = nn::to_doubles(*x), wv = nn::to_doubles(*w), ov = nn::to_doubles(*offset);
  const std::vector<double> mv = mask ? nn::to_doubles(*mask) : std::vector<double>();
  const std::vector<double> bv = b ? nn::to_doubles(*b) : std::vector<double>(M, 0.0);
  const int64_t cg = C / group, mg = M / group, c_per_og = C / og, opix = OH * OW;
  std::vector<double> yv(y->numel());
  std::vector<double> samples(static_cast<size_t>(KH * KW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        const int64_t pix = i * OW + j;
        for (int64_t m = 0; m < M; ++m) yv[(n * M + m) * opix + pix] = bv[m];
        for (int64_t c = 0; c < C; ++c) {
          const int64_t grp = c / cg, ogi = c / c_per_og;
          const double* plane = xv.data() + (n * C + c) * H * Wd;
          // Sample the deformed taps for this channel once; every output channel of the group uses them.
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t tap = kh * KW + kw;
              const int64_t oc_h = ((n * og + ogi) * KH * KW + tap) * 2;
              const double dh = ov[oc_h * opix + pix], dw = ov[(oc_h + 1) * opix + pix];
              const double yy = static_cast<double>(i * g.strides[0] - g.pad_begin[0] + kh * g.dilations[0]) + dh;
              const double xx = static_cast<double>(j * g.strides[1] - g.pad_begin[1] + kw * g.dilations[1]) + dw;
              double s = bilinear_zero(plane, H, Wd, yy, xx);
              if (mask) s *= mv[((n * og + ogi) * KH * KW + tap) * opix + pix];
              samples[tap] = s;
            }
          for (int64_t mo = 0; mo < mg; ++mo) {
            const int64_t m = grp * mg + mo;
            const double* wp = wv.data() + (m * cg + (c - grp * cg)) * KH * KW;
            double acc = 0;
            for (int64_t t = 0; t < KH * KW; ++t) acc += wp[t] * samples[t];
            yv[(n * M + m) * opix + pix] += acc;
          }
        }
      }
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status deform_conv_infer(InferContext& ctx) {
  const auto* xs = ctx.input_shape(0);
  const auto* ws = ctx.input_shape(1);
  const auto* os = ctx.input_shape(2);
  std::optional<Shape> out;
  if (xs && *xs && (*xs)->size() >= 3) {
    Shape o((*xs)->size());
    o[0] = (**xs)[0];
    if (ws && *ws && !(*ws)->empty()) o[1] = (**ws)[0];
    if (os && *os && (*os)->size() == o.size())
      for (size_t i = 2; i < o.size(); ++i) o[i] = (**os)[i];
    out = o;
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}
}  // namespace

void register_deform_conv(OpRegistry& r) {
  r.add(OpSchema{.op_type = "DeformConv", .since_version = 19, .min_inputs = 3, .max_inputs = 5,
                 .infer = deform_conv_infer, .kernel = deform_conv_kernel});
}

}  // namespace ferry::ops
