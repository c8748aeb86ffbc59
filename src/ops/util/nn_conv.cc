#include "ops/util/nn_conv.h"

#include <algorithm>

namespace ferry::ops::nn {

namespace {
// Outputs o in [lo, hi) whose tap o*s - p + k*d lands in [0, in).
void valid_range(int64_t in, int64_t out, int64_t s, int64_t p, int64_t kd, int64_t& lo, int64_t& hi) {
  int64_t off = kd - p;  // tap = o*s + off
  // o*s + off >= 0  ->  o >= ceil(-off / s)
  int64_t a = -off;
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  // o*s + off <= in - 1  ->  o <= floor((in - 1 - off) / s)
  int64_t b = in - 1 - off;
  hi = b < 0 ? 0 : std::min<int64_t>(out, b / s + 1);
  if (lo > hi) lo = hi;
}
// y[i] += a * x[i * stride]. The unit-stride case is split out with non-aliasing pointers and the
// dynamic vectorizer cost model (the project builds with -O2, whose cheap model skips loops of unknown
// trip count); this inner loop is where resnet-sized models spend nearly all their time.
template <class Acc>
__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic"))) void axpy_unit(
    Acc* __restrict__ y, const Acc* __restrict__ x, Acc a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class Acc>
inline void axpy_strided(Acc* y, const Acc* x, Acc a, int64_t n, int64_t stride) {
  if (stride == 1) {
    axpy_unit(y, x, a, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i * stride];
}
}  // namespace

template <class Acc>
void conv_direct(const Acc* x, const Acc* w, Acc* y, int64_t N, int64_t C, int64_t M, int64_t group,
                 const Window3& g) {
  const int64_t cg = C / group, mg = M / group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t kvol = g.k[0] * g.k[1] * g.k[2];
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / mg;
      Acc* yp = y + (n * M + m) * out_plane;
      for (int64_t c = 0; c < cg; ++c) {
        const Acc* xp = x + (n * C + grp * cg + c) * in_plane;
        const Acc* wp = w + (m * cg + c) * kvol;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
          int64_t lo0, hi0;
          valid_range(g.in[0], g.out[0], g.s[0], g.p[0], k0 * g.d[0], lo0, hi0);
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
            int64_t lo1, hi1;
            valid_range(g.in[1], g.out[1], g.s[1], g.p[1], k1 * g.d[1], lo1, hi1);
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
              int64_t lo2, hi2;
              valid_range(g.in[2], g.out[2], g.s[2], g.p[2], k2 * g.d[2], lo2, hi2);
              const Acc wv = wp[(k0 * g.k[1] + k1) * g.k[2] + k2];
              const int64_t off2 = k2 * g.d[2] - g.p[2];
              for (int64_t o0 = lo0; o0 < hi0; ++o0) {
                const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
                for (int64_t o1 = lo1; o1 < hi1; ++o1) {
                  const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
                  const Acc* xrow = xp + (i0 * g.in[1] + i1) * g.in[2] + off2;
                  Acc* yrow = yp + (o0 * g.out[1] + o1) * g.out[2];
                  if (hi2 > lo2) axpy_strided(yrow + lo2, xrow + lo2 * g.s[2], wv, hi2 - lo2, g.s[2]);
                }
              }
            }
          }
        }
      }
    }
  }
}

template void conv_direct<double>(const double*, const double*, double*, int64_t, int64_t, int64_t, int64_t,
                                  const Window3&);
template void conv_direct<int64_t>(const int64_t*, const int64_t*, int64_t*, int64_t, int64_t, int64_t, int64_t,
                                   const Window3&);

Result<ConvSetup> conv_setup(const ir::Node& node, const Tensor& x, const Tensor& w) {
  const std::string& op = node.op_type;
  if (x.rank() < 3) return Status::invalid(op + ": X must have rank >= 3 (N, C, spatial...), got " + x.describe());
  if (w.rank() != x.rank())
    return Status::invalid(op + ": W " + w.describe() + " must have the rank of X " + x.describe());
  ConvSetup s;
  s.N = x.dim(0);
  s.C = x.dim(1);
  s.M = w.dim(0);
  s.group = node.attr_int("group", 1);
  if (s.group <= 0) return Status::invalid(op + ": group must be positive");
  if (s.C != w.dim(1) * s.group)
    return Status::invalid(op + ": X has " + std::to_string(s.C) + " channels but W " + w.describe() + " with group " +
                           std::to_string(s.group) + " expects " + std::to_string(w.dim(1) * s.group));
  if (s.M % s.group != 0)
    return Status::invalid(op + ": output channels " + std::to_string(s.M) + " not divisible by group " +
                           std::to_string(s.group));
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end());
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    return Status::invalid(op + ": kernel_shape attribute " + dims_to_string(node.attr_ints("kernel_shape")) +
                           " differs from W's spatial dims " + dims_to_string(kernel));
  FERRY_ASSIGN_OR_RETURN(s.geom, window_geometry(node, in, kernel, WindowOptions{}));
  FERRY_ASSIGN_OR_RETURN(s.win, to_window3(s.geom, op.c_str()));
  s.out_dims = {s.N, s.M};
  for (int64_t v : s.geom.out) s.out_dims.push_back(v);
  return s;
}

Status infer_conv(InferContext& ctx, DType out_dtype, int x_input, int w_input) {
  const ir::Value* x = ctx.input(x_input);
  const ir::Value* w = ctx.input(w_input);
  if (!x || !x->shape) {
    ctx.set_output(0, out_dtype, std::nullopt);
    return Status();
  }
  const Shape& xs = *x->shape;
  if (xs.size() < 3) return Status::invalid(ctx.node().op_type + ": X must have rank >= 3");
  Shape out(xs.size());
  out[0] = xs[0];
  std::vector<int64_t> kernel = ctx.node().attr_ints("kernel_shape");
  bool kernel_known = kernel.size() == xs.size() - 2;
  if (w && w->shape && w->shape->size() == xs.size()) {
    out[1] = (*w->shape)[0];
    if (!kernel_known) {
      kernel.clear();
      kernel_known = true;
      for (size_t i = 2; i < xs.size(); ++i) {
        if (!(*w->shape)[i].is_static()) kernel_known = false;
        kernel.push_back((*w->shape)[i].value);
      }
    }
  }
  if (kernel_known) {
    auto dims = infer_window_dims(ctx.node(), xs, kernel, WindowOptions{});
    if (dims)
      for (size_t i = 0; i < dims->size(); ++i) out[i + 2] = (*dims)[i];
  }
  ctx.set_output(0, out_dtype, out);
  return Status();
}

Result<std::vector<double>> conv_float_reference(const std::string& op, const ConvSetup& s, const Tensor& x,
                                                 const Tensor& w, const Tensor* b) {
  if (b && !(b->rank() == 1 && b->numel() == s.M))
    return Status::invalid(op + ": B must be a 1-D tensor of " + std::to_string(s.M) + " values, got " + b->describe());
  int64_t numel = 1;
  for (int64_t d : s.out_dims) numel *= d;
  const int64_t out_plane = s.M ? numel / std::max<int64_t>(1, s.N * s.M) : 0;
  std::vector<double> acc(numel, 0.0);
  if (b) {
    std::vector<double> bias = to_doubles(*b);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t m = 0; m < s.M; ++m) std::fill_n(acc.begin() + (n * s.M + m) * out_plane, out_plane, bias[m]);
  }
  std::vector<double> xv = to_doubles(x), wv = to_doubles(w);
  conv_direct<double>(xv.data(), wv.data(), acc.data(), s.N, s.C, s.M, s.group, s.win);
  return acc;
}

}  // namespace ferry::ops::nn
