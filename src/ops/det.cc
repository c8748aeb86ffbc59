// Det: determinant of each trailing [M, M] matrix of X [*, M, M], by LU decomposition with partial
// pivoting in double.
#include <cmath>
#include <string>
#include <utility>

#include "ops/op.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

double determinant(std::vector<double> a, int64_t m) {
  double det = 1;
  for (int64_t col = 0; col < m; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < m; ++r)
      if (std::fabs(a[r * m + col]) > std::fabs(a[pivot * m + col])) pivot = r;
    if (a[pivot * m + col] == 0) return 0.0;
    if (pivot != col) {
      for (int64_t k = 0; k < m; ++k) std::swap(a[pivot * m + k], a[col * m + k]);
      det = -det;
    }
    const double p = a[col * m + col];
    det *= p;
    for (int64_t r = col + 1; r < m; ++r) {
      const double f = a[r * m + col] / p;
      for (int64_t k = col; k < m; ++k) a[r * m + k] -= f * a[col * m + k];
    }
  }
  return det;
}

Status det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2))
    return Status::invalid("Det needs square matrices [*, M, M], got " + x.describe());
  if (!is_floating(x.dtype())) return Status::unsupported("Det: unsupported dtype " + x.describe());
  const int64_t m = x.dim(-1);
  std::vector<int64_t> out_dims(x.dims().begin(), x.dims().end() - 2);
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), out_dims));
  const std::vector<double> xv = x.to_double_vector();
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < out->numel(); ++b) {
      std::vector<double> mat(xv.begin() + b * m * m, xv.begin() + (b + 1) * m * m);
      out->data<T>()[b] = from_double<T>(determinant(std::move(mat), m));
    }
  });
  return Status();
}

Status det_infer(InferContext& ctx) {
  const std::optional<Shape>* in = ctx.input_shape(0);
  std::optional<Shape> out;
  if (in && *in && (*in)->size() >= 2) out = Shape((*in)->begin(), (*in)->end() - 2);
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}

}  // namespace

void register_det(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Det",
      .since_version = 11,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = det_infer,
      .kernel = det_kernel,
  });
}

}  // namespace ferry::ops
