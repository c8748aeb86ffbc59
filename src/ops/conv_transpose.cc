// ConvTranspose: the gradient of Conv with respect to its input, for 1-3 spatial dims. Each input pixel
// scatters x * w into out[i*stride - pad_begin + k*dilation]. Output size comes from output_shape
// (with auto_pad SAME_* the pads are derived, SAME_UPPER putting the smaller half first as the ONNX
// reference does; otherwise the explicit pads place the result), from
// auto_pad SAME_* (out = in * stride) or from explicit pads:
//   out = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end.
#include <algorithm>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {

int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

struct TransposeGeom {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, out;
};

// in: X's spatial dims; kernel: W's.
Result<TransposeGeom> transpose_geometry(const ir::Node& node, const std::vector<int64_t>& in,
                                         const std::vector<int64_t>& kernel) {
  const size_t n = in.size();
  TransposeGeom g;
  g.in = in;
  g.kernel = kernel;
  auto ints = [&](const char* name, std::vector<int64_t> dflt) {
    std::vector<int64_t> v = node.attr_ints(name, dflt);
    return v.empty() ? dflt : v;
  };
  g.strides = ints("strides", std::vector<int64_t>(n, 1));
  g.dilations = ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> out_pad = ints("output_padding", std::vector<int64_t>(n, 0));
  if (g.strides.size() != n || g.dilations.size() != n || out_pad.size() != n)
    return Status::invalid("ConvTranspose: strides, dilations and output_padding need " + std::to_string(n) + " values");
  for (size_t i = 0; i < n; ++i)
    if (g.strides[i] <= 0 || g.dilations[i] <= 0 || out_pad[i] < 0 || kernel[i] <= 0)
      return Status::invalid("ConvTranspose: strides, dilations and kernel must be positive, output_padding >= 0");
  for (size_t i = 0; i < n; ++i)
    if (g.strides[i] > nn::kMaxWindowAttr || g.dilations[i] > nn::kMaxWindowAttr || out_pad[i] > nn::kMaxWindowAttr ||
        kernel[i] > nn::kMaxWindowAttr || in[i] > (int64_t{1} << 36))
      return Status::invalid("ConvTranspose: strides, dilations, kernel and output_padding must be at most " +
                             std::to_string(nn::kMaxWindowAttr));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID" &&
      !auto_pad.empty())
    return Status::invalid("ConvTranspose: unknown auto_pad '" + auto_pad + "'");
  const bool has_pads = node.has_attr("pads") && auto_pad != "VALID";
  std::vector<int64_t> pads = has_pads ? node.attr_ints("pads") : std::vector<int64_t>(2 * n, 0);
  if (pads.size() != 2 * n) return Status::invalid("ConvTranspose: pads must have " + std::to_string(2 * n) + " values");
  for (int64_t p : pads)
    if (p > nn::kMaxWindowAttr || p < -nn::kMaxWindowAttr) return Status::invalid("ConvTranspose: pads out of range");
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != n)
    return Status::invalid("ConvTranspose: output_shape must have " + std::to_string(n) + " values");
  for (int64_t v : out_shape)
    if (v > (int64_t{1} << 40)) return Status::invalid("ConvTranspose: output_shape out of range");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (out_shape.empty() && same && !has_pads)
    for (size_t i = 0; i < n; ++i) out_shape.push_back(in[i] * g.strides[i]);
  g.pad_begin.assign(n, 0);
  g.out.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t full = g.strides[i] * (in[i] - 1) + out_pad[i] + (kernel[i] - 1) * g.dilations[i] + 1;
    if (!out_shape.empty()) {
      g.out[i] = out_shape[i];
      if (!same) {
        // As the ONNX reference: explicit (default zero) pads place the result, output_shape crops it.
        g.pad_begin[i] = pads[i];
      } else {
        const int64_t total = full - out_shape[i];
        g.pad_begin[i] = auto_pad == "SAME_UPPER" ? floor_div2(total) : total - floor_div2(total);
      }
    } else {
      if (pads[i] < 0 || pads[i + n] < 0) return Status::invalid("ConvTranspose: pads must not be negative");
      g.pad_begin[i] = pads[i];
      g.out[i] = full - pads[i] - pads[i + n];
    }
    if (g.out[i] <= 0)
      return Status::invalid("ConvTranspose: output spatial dim " + std::to_string(i) + " would be " +
                             std::to_string(g.out[i]));
  }
  return g;
}

Status conv_transpose_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* w, nn::tensor_in(ctx, 1, "W"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::optional_tensor_in(ctx, 2, "B"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype()))
    return Status::invalid("ConvTranspose: X, W and B must have the same type");
  if (x->rank() < 3 || w->rank() != x->rank())
    return Status::invalid("ConvTranspose: X " + x->describe() + " and W " + w->describe() +
                           " must have the same rank >= 3");
  const int nsp = x->rank() - 2;
  if (nsp > 3) return Status::unsupported("ConvTranspose: more than 3 spatial dims");
  const int64_t N = x->dim(0), C = x->dim(1), group = ctx.node().attr_int("group", 1);
  if (group <= 0 || C != w->dim(0) || C % group != 0)
    return Status::invalid("ConvTranspose: W " + w->describe() + " must have X's " + std::to_string(C) +
                           " channels as dim 0, divisible by group " + std::to_string(group));
  const int64_t mg = w->dim(1), M = mg * group, cg = C / group;
  std::vector<int64_t> in(x->dims().begin() + 2, x->dims().end()), kernel(w->dims().begin() + 2, w->dims().end());
  if (ctx.node().has_attr("kernel_shape") && ctx.node().attr_ints("kernel_shape") != kernel)
    return Status::invalid("ConvTranspose: kernel_shape attribute differs from W's spatial dims");
  FERRY_ASSIGN_OR_RETURN(TransposeGeom g, transpose_geometry(ctx.node(), in, kernel));
  if (b && !(b->rank() == 1 && b->numel() == M))
    return Status::invalid("ConvTranspose: B must be a 1-D tensor of " + std::to_string(M) + " values");
  std::vector<int64_t> out_dims = {N, M};
  for (int64_t v : g.out) out_dims.push_back(v);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), out_dims));
  // Canonical 3-D form (leading unit dims).
  int64_t I[3], K[3], S[3], D[3], P[3], O[3];
  for (int i = 0; i < 3; ++i) {
    int j = i - (3 - nsp);
    I[i] = j >= 0 ? g.in[j] : 1;
    K[i] = j >= 0 ? g.kernel[j] : 1;
    S[i] = j >= 0 ? g.strides[j] : 1;
    D[i] = j >= 0 ? g.dilations[j] : 1;
    P[i] = j >= 0 ? g.pad_begin[j] : 0;
    O[i] = j >= 0 ? g.out[j] : 1;
  }
  const int64_t in_plane = I[0] * I[1] * I[2], out_plane = O[0] * O[1] * O[2], kvol = K[0] * K[1] * K[2];
  std::vector<double> xv = nn::to_doubles(*x), wv = nn::to_doubles(*w), acc(y->numel(), 0.0);
  if (b) {
    std::vector<double> bias = nn::to_doubles(*b);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) std::fill_n(acc.begin() + (n * M + m) * out_plane, out_plane, bias[m]);
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t grp = c / cg;
      const double* xp = xv.data() + (n * C + c) * in_plane;
      for (int64_t mo = 0; mo < mg; ++mo) {
        const int64_t m = grp * mg + mo;
        double* yp = acc.data() + (n * M + m) * out_plane;
        const double* wp = wv.data() + (c * mg + mo) * kvol;
        for (int64_t i0 = 0; i0 < I[0]; ++i0)
          for (int64_t i1 = 0; i1 < I[1]; ++i1)
            for (int64_t i2 = 0; i2 < I[2]; ++i2) {
              const double xval = xp[(i0 * I[1] + i1) * I[2] + i2];
              for (int64_t k0 = 0; k0 < K[0]; ++k0) {
                const int64_t o0 = i0 * S[0] - P[0] + k0 * D[0];
                if (o0 < 0 || o0 >= O[0]) continue;
                for (int64_t k1 = 0; k1 < K[1]; ++k1) {
                  const int64_t o1 = i1 * S[1] - P[1] + k1 * D[1];
                  if (o1 < 0 || o1 >= O[1]) continue;
                  for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                    const int64_t o2 = i2 * S[2] - P[2] + k2 * D[2];
                    if (o2 < 0 || o2 >= O[2]) continue;
                    yp[(o0 * O[1] + o1) * O[2] + o2] += xval * wp[(k0 * K[1] + k1) * K[2] + k2];
                  }
                }
              }
            }
      }
    }
  nn::store_doubles(*y, acc.data());
  return Status();
}

Status conv_transpose_infer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const ir::Value* x = ctx.input(0);
  const ir::Value* w = ctx.input(1);
  if (!x || !x->shape || x->shape->size() < 3 || !w || !w->shape || w->shape->size() != x->shape->size()) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const Shape& xs = *x->shape;
  const Shape& ws = *w->shape;
  Shape out(xs.size());
  out[0] = xs[0];
  const int64_t group = ctx.node().attr_int("group", 1);
  if (ws[1].is_static()) out[1] = Dim(ws[1].value * group);
  std::vector<int64_t> in, kernel;
  bool known = true;
  for (size_t i = 2; i < xs.size(); ++i) {
    known = known && xs[i].is_static() && ws[i].is_static();
    in.push_back(xs[i].value);
    kernel.push_back(ws[i].value);
  }
  if (known) {
    auto g = transpose_geometry(ctx.node(), in, kernel);
    if (g.ok())
      for (size_t i = 0; i < g->out.size(); ++i) out[i + 2] = Dim(g->out[i]);
  }
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_conv_transpose(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "ConvTranspose",
      .since_version = 1,
      .min_inputs = 2,
      .max_inputs = 3,
      .infer = conv_transpose_infer,
      .kernel = conv_transpose_kernel,
  });
}

}  // namespace ferry::ops
