// AffineGrid: the sampling grid of an affine transform, for GridSample. theta [N, 2, 3] with size
// [N, C, H, W] gives [N, H, W, 2]; theta [N, 3, 4] with size [N, C, D, H, W] gives [N, D, H, W, 3]. Each
// output point is theta @ (x, y, [z,] 1) with x running over W, y over H, z over D in [-1, 1]: pixel
// centres (-1 + (2i + 1) / n), or the corners (-1 + 2i / (n - 1)) with align_corners.
#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
double base_coord(int64_t i, int64_t n, bool align) {
  if (align) return n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
}

Status affine_grid_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* theta, nn::tensor_in(ctx, 0, "theta"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* size_t_, nn::tensor_in(ctx, 1, "size"));
  if (!is_floating(theta->dtype())) return nn::bad_dtype(ctx, *theta, "theta");
  if (size_t_->dtype() != DType::kInt64) return nn::bad_dtype(ctx, *size_t_, "size");
  const std::vector<int64_t> size = nn::to_int64s(*size_t_);
  if (size.size() != 4 && size.size() != 5) return Status::invalid("AffineGrid: size must have 4 or 5 values");
  const int r = static_cast<int>(size.size()) - 2;
  const int64_t N = size[0];
  if (theta->rank() != 3 || theta->dim(0) != N || theta->dim(1) != r || theta->dim(2) != r + 1)
    return Status::invalid("AffineGrid: theta " + theta->describe() + " must be [" + std::to_string(N) + ", " +
                           std::to_string(r) + ", " + std::to_string(r + 1) + "]");
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  // Spatial sizes in output order (D,) H, W; pad 2-D to D = 1.
  const int64_t D = r == 3 ? size[2] : 1, H = size[r == 3 ? 3 : 2], W = size[r == 3 ? 4 : 3];
  if (D < 0 || H < 0 || W < 0 || N < 0) return Status::invalid("AffineGrid: negative size");
  std::vector<int64_t> out_dims = {N};
  if (r == 3) out_dims.push_back(D);
  out_dims.push_back(H);
  out_dims.push_back(W);
  out_dims.push_back(r);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, theta->dtype(), out_dims));
  const std::vector<double> th = nn::to_doubles(*theta);
  std::vector<double> yv(y->numel());
  int64_t o = 0;
  for (int64_t n = 0; n < N; ++n) {
    const double* t = th.data() + n * r * (r + 1);
    for (int64_t d = 0; d < D; ++d)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          double v[4] = {base_coord(w, W, align), base_coord(h, H, align), 0.0, 1.0};
          if (r == 3) v[2] = base_coord(d, D, align);
          else v[2] = 1.0;
          for (int i = 0; i < r; ++i) {
            double acc = 0;
            for (int j = 0; j <= r; ++j) acc += t[i * (r + 1) + j] * v[j];
            yv[o++] = acc;
          }
        }
  }
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status affine_grid_infer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (const Tensor* s = ctx.input_constant(1)) {
    std::vector<int64_t> size = nn::to_int64s(*s);
    if (size.size() == 4) {
      ctx.set_output(0, dt, to_shape({size[0], size[2], size[3], 2}));
      return Status();
    }
    if (size.size() == 5) {
      ctx.set_output(0, dt, to_shape({size[0], size[2], size[3], size[4], 3}));
      return Status();
    }
  }
  ctx.set_output(0, dt, std::nullopt);
  return Status();
}
}  // namespace

void register_affine_grid(OpRegistry& r) {
  r.add(OpSchema{.op_type = "AffineGrid", .since_version = 20, .min_inputs = 2, .max_inputs = 2,
                 .infer = affine_grid_infer, .kernel = affine_grid_kernel});
}

}  // namespace ferry::ops
