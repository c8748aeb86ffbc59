// AveragePool, MaxPool and LpPool over 1-3 spatial dims: kernel_shape, strides, pads or auto_pad,
// ceil_mode (the last window must start inside the input or its leading pad), dilations (MaxPool from
// opset 10, AveragePool from 19, LpPool from 18). AveragePool divides by the taps inside the input, or
// with count_include_pad by the taps inside input + explicit pads. MaxPool's optional Indices output holds
// flat indices into X (row-major, or column-major spatial dims with storage_order = 1).
#include <cmath>
#include <limits>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {

enum class PoolKind { kAverage, kMax, kLp };

nn::WindowOptions pool_options(PoolKind kind, int opset) {
  nn::WindowOptions o;
  o.use_ceil_mode = true;
  o.use_dilations = kind == PoolKind::kMax ? opset >= 10 : kind == PoolKind::kAverage ? opset >= 19 : opset >= 18;
  return o;
}

Result<nn::WindowGeom> pool_geometry(const ir::Node& node, const Tensor& x, PoolKind kind) {
  if (x.rank() < 3) return Status::invalid(node.op_type + ": X must have rank >= 3, got " + x.describe());
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (kernel.size() != static_cast<size_t>(x.rank() - 2))
    return Status::invalid(node.op_type + ": kernel_shape must have " + std::to_string(x.rank() - 2) + " values");
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end());
  return nn::window_geometry(node, in, kernel, pool_options(kind, node.opset));
}

// Calls f(plane, out_index, taps) for every output; taps(g) calls g(in_offset_or_-1, counted) per tap,
// in_offset -1 for taps in the padding.
template <class F>
void for_each_window(const nn::Window3& w, int64_t planes, F&& f) {
  const int64_t out_plane = w.out[0] * w.out[1] * w.out[2];
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          const int64_t oi = pl * out_plane + (o0 * w.out[1] + o1) * w.out[2] + o2;
          auto taps = [&](auto&& g) {
            for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
              const int64_t t0 = o0 * w.s[0] - w.p[0] + k0 * w.d[0];
              if (t0 >= w.in[0] + w.pe[0]) continue;
              for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
                const int64_t t1 = o1 * w.s[1] - w.p[1] + k1 * w.d[1];
                if (t1 >= w.in[1] + w.pe[1]) continue;
                for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                  const int64_t t2 = o2 * w.s[2] - w.p[2] + k2 * w.d[2];
                  if (t2 >= w.in[2] + w.pe[2]) continue;
                  const bool inside = t0 >= 0 && t0 < w.in[0] && t1 >= 0 && t1 < w.in[1] && t2 >= 0 && t2 < w.in[2];
                  g(inside ? (t0 * w.in[1] + t1) * w.in[2] + t2 : int64_t{-1}, t0, t1, t2);
                }
              }
            }
          };
          f(pl, oi, taps);
        }
}

Status average_or_lp_kernel(KernelContext& ctx, PoolKind kind) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  FERRY_ASSIGN_OR_RETURN(nn::WindowGeom g, pool_geometry(ctx.node(), *x, kind));
  FERRY_ASSIGN_OR_RETURN(nn::Window3 w, nn::to_window3(g, ctx.node().op_type.c_str()));
  const bool include_pad = kind == PoolKind::kAverage && ctx.node().attr_int("count_include_pad", 0) != 0;
  const double p = kind == PoolKind::kLp ? static_cast<double>(ctx.node().attr_int("p", 2)) : 1.0;
  if (kind == PoolKind::kLp && ctx.opset() < 2) return Status::unsupported("LpPool: opset 1 (float p) is not supported");
  if (kind == PoolKind::kLp && p <= 0) return Status::invalid("LpPool: p must be positive");
  std::vector<int64_t> out_dims = {x->dim(0), x->dim(1)};
  for (int64_t v : g.out) out_dims.push_back(v);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), out_dims));
  const std::vector<double> xv = nn::to_doubles(*x);
  std::vector<double> yv(y->numel());
  const int64_t in_plane = w.in[0] * w.in[1] * w.in[2];
  for_each_window(w, x->dim(0) * x->dim(1), [&](int64_t pl, int64_t oi, auto&& taps) {
    const double* xp = xv.data() + pl * in_plane;
    double sum = 0;
    int64_t count = 0;
    taps([&](int64_t off, int64_t, int64_t, int64_t) {
      if (off >= 0) {
        sum += kind == PoolKind::kLp ? std::pow(std::fabs(xp[off]), p) : xp[off];
        ++count;
      } else if (include_pad) {
        ++count;
      }
    });
    if (kind == PoolKind::kLp)
      yv[oi] = std::pow(sum, 1.0 / p);
    else
      yv[oi] = count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
  });
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status max_pool_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  const DType dt = x->dtype();
  if (!is_floating(dt) && dt != DType::kInt8 && dt != DType::kUInt8) return nn::bad_dtype(ctx, *x, "X");
  FERRY_ASSIGN_OR_RETURN(nn::WindowGeom g, pool_geometry(ctx.node(), *x, PoolKind::kMax));
  FERRY_ASSIGN_OR_RETURN(nn::Window3 w, nn::to_window3(g, "MaxPool"));
  const int64_t storage_order = ctx.node().attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) return Status::invalid("MaxPool: storage_order must be 0 or 1");
  std::vector<int64_t> out_dims = {x->dim(0), x->dim(1)};
  for (int64_t v : g.out) out_dims.push_back(v);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, dt, out_dims));
  Tensor* ind = nullptr;
  if (ctx.wants_output(1)) {
    FERRY_ASSIGN_OR_RETURN(ind, ctx.allocate_output(1, DType::kInt64, out_dims));
  }
  const int64_t in_plane = w.in[0] * w.in[1] * w.in[2];
  // Column-major strides of the canonical 3-D spatial index (for storage_order = 1); the leading unit
  // dims of a 1-D or 2-D input contribute nothing since their coordinate is always 0.
  const int nsp = g.rank();
  int64_t cm[3] = {0, 0, 0};
  {
    int64_t acc = 1;
    for (int i = 3 - nsp; i < 3; ++i) {
      cm[i] = acc;
      acc *= w.in[i];
    }
  }
  dispatch_numeric(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = x->data<T>();
    T* yd = y->data<T>();
    int64_t* id = ind ? ind->data<int64_t>() : nullptr;
    for_each_window(w, x->dim(0) * x->dim(1), [&](int64_t pl, int64_t oi, auto&& taps) {
      const T* xp = xd + pl * in_plane;
      bool any = false;
      C best{};
      int64_t best_index = -1;
      taps([&](int64_t off, int64_t t0, int64_t t1, int64_t t2) {
        if (off < 0) return;
        const C v = static_cast<C>(xp[off]);
        if (!any || v > best) {
          any = true;
          best = v;
          best_index = storage_order == 0 ? off : t0 * cm[0] + t1 * cm[1] + t2 * cm[2];
        }
      });
      yd[oi] = static_cast<T>(any ? best : C{});
      if (id) id[oi] = any ? pl * in_plane + best_index : -1;
    });
  });
  return Status();
}

Status pool_infer(InferContext& ctx, PoolKind kind) {
  const ir::Value* x = ctx.input(0);
  const DType dt = ctx.input_dtype(0);
  if (!x || !x->shape || x->shape->size() < 3) {
    ctx.set_output(0, dt, std::nullopt);
    ctx.set_output(1, DType::kInt64, std::nullopt);
    return Status();
  }
  Shape out(x->shape->size());
  out[0] = (*x->shape)[0];
  out[1] = (*x->shape)[1];
  auto dims = nn::infer_window_dims(ctx.node(), *x->shape, ctx.node().attr_ints("kernel_shape"),
                                    pool_options(kind, ctx.opset()));
  if (dims)
    for (size_t i = 0; i < dims->size(); ++i) out[i + 2] = (*dims)[i];
  ctx.set_output(0, dt, out);
  ctx.set_output(1, DType::kInt64, out);
  return Status();
}
}  // namespace

void register_pool(OpRegistry& r) {
  r.add(OpSchema{.op_type = "AveragePool", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = [](InferContext& c) { return pool_infer(c, PoolKind::kAverage); },
                 .kernel = [](KernelContext& c) { return average_or_lp_kernel(c, PoolKind::kAverage); }});
  r.add(OpSchema{.op_type = "LpPool", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = [](InferContext& c) { return pool_infer(c, PoolKind::kLp); },
                 .kernel = [](KernelContext& c) { return average_or_lp_kernel(c, PoolKind::kLp); }});
  r.add(OpSchema{.op_type = "MaxPool", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = [](InferContext& c) { return pool_infer(c, PoolKind::kMax); },
                 .kernel = max_pool_kernel});
}

}  // namespace ferry::ops
