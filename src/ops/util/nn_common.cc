#include "ops/util/nn_common.h"

#include <algorithm>
#include <cmath>

namespace ferry::ops::nn {

Result<const Tensor*> tensor_in(const KernelContext& ctx, int i, const char* what) {
  const RtValue* v = ctx.input_value(i);
  if (!v || v->is_none())
    return Status::invalid(ctx.node().op_type + ": input " + std::to_string(i) + " (" + what + ") is missing");
  if (!v->is_tensor())
    return Status::invalid(ctx.node().op_type + ": input " + std::to_string(i) + " (" + what + ") must be a tensor");
  return &v->tensor;
}

Result<const Tensor*> optional_tensor_in(const KernelContext& ctx, int i, const char* what) {
  if (!ctx.has_input(i)) return static_cast<const Tensor*>(nullptr);
  return tensor_in(ctx, i, what);
}

Status bad_dtype(const KernelContext& ctx, const Tensor& t, const char* what) {
  return Status::unsupported(ctx.node().op_type + ": " + what + " of type " + std::string(dtype_name(t.dtype())) +
                             " is not supported");
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (is_half_v<T>)
        v[i] = static_cast<float>(p[i]);
      else
        v[i] = static_cast<double>(p[i]);
    }
  });
  return v;
}

std::vector<int64_t> to_int64s(const Tensor& t) {
  std::vector<int64_t> v(t.numel());
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (is_half_v<T>)
        v[i] = static_cast<int64_t>(static_cast<float>(p[i]));
      else
        v[i] = static_cast<int64_t>(p[i]);
    }
  });
  return v;
}

void store_doubles(Tensor& t, const double* v) {
  dispatch_floating(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (is_half_v<T>)
        p[i] = T(static_cast<float>(v[i]));
      else
        p[i] = static_cast<T>(v[i]);
    }
  });
}

void store_int64s(Tensor& t, const int64_t* v) {
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(static_cast<uint64_t>(v[i]));
    }
  });
}

Result<std::vector<double>> per_channel_param(const KernelContext& ctx, const Tensor* t, int64_t n, double dflt,
                                              const char* what) {
  if (!t) return std::vector<double>(n, dflt);
  if (t->rank() > 1 || (t->numel() != 1 && t->numel() != n))
    return Status::invalid(ctx.node().op_type + ": " + what + " must be a scalar or a 1-D tensor of " +
                           std::to_string(n) + " values, got " + t->describe());
  std::vector<double> v = to_doubles(*t);
  if (v.size() == 1) v.assign(n, v[0]);
  return v;
}

int64_t saturate_round(double v, DType t) {
  double lo = 0, hi = 0;
  switch (t) {
    case DType::kInt8: lo = -128; hi = 127; break;
    case DType::kUInt8: lo = 0; hi = 255; break;
    case DType::kInt16: lo = -32768; hi = 32767; break;
    case DType::kUInt16: lo = 0; hi = 65535; break;
    case DType::kInt32: lo = -2147483648.0; hi = 2147483647.0; break;
    case DType::kUInt32: lo = 0; hi = 4294967295.0; break;
    default: lo = -9.2e18; hi = 9.2e18; break;
  }
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);  // the default rounding mode: half to even
  return static_cast<int64_t>(std::clamp(r, lo, hi));
}

double round_to_dtype(double v, DType t) {
  switch (t) {
    case DType::kFloat32: return static_cast<float>(v);
    case DType::kFloat16: return static_cast<float>(float16(static_cast<float>(v)));
    case DType::kBFloat16: return static_cast<float>(bfloat16(static_cast<float>(v)));
    default: return v;
  }
}

bool is_quant_int8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

namespace {
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
}  // namespace

Result<WindowGeom> window_geometry(const ir::Node& node, const std::vector<int64_t>& in_spatial,
                                   const std::vector<int64_t>& kernel, WindowOptions opts) {
  const std::string& op = node.op_type;
  const size_t n = in_spatial.size();
  if (kernel.size() != n)
    return Status::invalid(op + ": kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
                           std::to_string(n));
  WindowGeom g;
  g.in = in_spatial;
  g.kernel = kernel;
  g.strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  g.dilations = opts.use_dilations ? node.attr_ints("dilations", std::vector<int64_t>(n, 1)) : std::vector<int64_t>(n, 1);
  if (g.strides.empty()) g.strides.assign(n, 1);
  if (g.dilations.empty()) g.dilations.assign(n, 1);
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.empty()) pads.assign(2 * n, 0);
  if (g.strides.size() != n) return Status::invalid(op + ": strides must have " + std::to_string(n) + " values");
  if (g.dilations.size() != n) return Status::invalid(op + ": dilations must have " + std::to_string(n) + " values");
  if (pads.size() != 2 * n) return Status::invalid(op + ": pads must have " + std::to_string(2 * n) + " values");
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0) return Status::invalid(op + ": strides must be positive");
    if (g.dilations[i] <= 0) return Status::invalid(op + ": dilations must be positive");
    if (g.kernel[i] <= 0) return Status::invalid(op + ": kernel_shape must be positive");
    if (pads[i] < 0 || pads[i + n] < 0) return Status::invalid(op + ": pads must not be negative");
    if (g.kernel[i] > kMaxWindowAttr || g.strides[i] > kMaxWindowAttr || g.dilations[i] > kMaxWindowAttr ||
        pads[i] > kMaxWindowAttr || pads[i + n] > kMaxWindowAttr)
      return Status::invalid(op + ": kernel_shape, strides, dilations and pads must be at most " +
                             std::to_string(kMaxWindowAttr));
    if (g.in[i] < 0) return Status::invalid(op + ": negative input dim");
  }
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool ceil_mode = opts.use_ceil_mode && node.attr_int("ceil_mode", 0) != 0;
  g.pad_begin.assign(n, 0);
  g.pad_end.assign(n, 0);
  g.out.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1, s = g.strides[i], in = g.in[i];
    if (auto_pad == "NOTSET" || auto_pad.empty()) {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + n];
      int64_t span = in + pads[i] + pads[i + n] - eff;
      if (span < 0) {
        g.out[i] = 0;
      } else if (ceil_mode) {
        g.out[i] = ceil_div(span, s) + 1;
        // The last window must start inside the input or its leading pad.
        if ((g.out[i] - 1) * s >= in + pads[i]) --g.out[i];
      } else {
        g.out[i] = floor_div(span, s) + 1;
      }
    } else if (auto_pad == "VALID") {
      g.out[i] = in - eff < 0 ? 0 : floor_div(in - eff, s) + 1;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = ceil_div(in, s);
      int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * s + eff - in);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else {
      return Status::invalid(op + ": unknown auto_pad '" + auto_pad + "'");
    }
    if (g.out[i] <= 0)
      return Status::invalid(op + ": the window (kernel " + std::to_string(g.kernel[i]) + ", dilation " +
                             std::to_string(g.dilations[i]) + ") does not fit spatial dim " + std::to_string(i) +
                             " of size " + std::to_string(in) + " with its pads");
  }
  return g;
}

std::optional<std::vector<Dim>> infer_window_dims(const ir::Node& node, const Shape& x_shape,
                                                  const std::vector<int64_t>& kernel, WindowOptions opts) {
  if (x_shape.size() < 3 || kernel.size() != x_shape.size() - 2) return std::nullopt;
  std::vector<int64_t> in;
  for (size_t i = 2; i < x_shape.size(); ++i) {
    if (!x_shape[i].is_static()) return std::vector<Dim>(x_shape.size() - 2, Dim());
    in.push_back(x_shape[i].value);
  }
  auto g = window_geometry(node, in, kernel, opts);
  if (!g.ok()) return std::nullopt;
  std::vector<Dim> out;
  for (int64_t v : g->out) out.push_back(Dim(v));
  return out;
}

Result<Window3> to_window3(const WindowGeom& g, const char* op) {
  const int n = g.rank();
  if (n < 1 || n > 3)
    return Status::unsupported(std::string(op) + ": " + std::to_string(n) +
                               " spatial dims; the reference kernel handles 1 to 3");
  Window3 w;
  for (int i = 0; i < 3; ++i) {
    int j = i - (3 - n);
    bool real = j >= 0;
    w.in[i] = real ? g.in[j] : 1;
    w.k[i] = real ? g.kernel[j] : 1;
    w.s[i] = real ? g.strides[j] : 1;
    w.d[i] = real ? g.dilations[j] : 1;
    w.p[i] = real ? g.pad_begin[j] : 0;
    w.pe[i] = real ? g.pad_end[j] : 0;
    w.out[i] = real ? g.out[j] : 1;
  }
  return w;
}

}  // namespace ferry::ops::nn
