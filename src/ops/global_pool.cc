// GlobalAveragePool, GlobalMaxPool and GlobalLpPool: one window over all spatial dims of [N, C, ...],
// giving [N, C, 1, ...]. Averages and Lp norms accumulate in double.
#include <cmath>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
enum class GlobalKind { kAverage, kMax, kLp };

Status global_pool_kernel(KernelContext& ctx, GlobalKind kind) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  const DType dt = x->dtype();
  const bool int_ok = kind == GlobalKind::kMax && (dt == DType::kInt8 || dt == DType::kUInt8);
  if (!is_floating(dt) && !int_ok) return nn::bad_dtype(ctx, *x, "X");
  if (x->rank() < 2) return Status::invalid(ctx.node().op_type + ": X must have rank >= 2, got " + x->describe());
  std::vector<int64_t> out_dims(x->rank(), 1);
  out_dims[0] = x->dim(0);
  out_dims[1] = x->dim(1);
  const int64_t planes = x->dim(0) * x->dim(1);
  const int64_t plane = planes ? x->numel() / planes : 0;
  if (plane == 0 && x->numel() == 0 && planes > 0)
    return Status::invalid(ctx.node().op_type + ": empty spatial dims in " + x->describe());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, dt, out_dims));
  const double p = static_cast<double>(ctx.node().attr_int("p", 2));
  if (kind == GlobalKind::kLp && p <= 0) return Status::invalid("GlobalLpPool: p must be positive");
  if (kind == GlobalKind::kMax) {
    dispatch_numeric(dt, [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* xd = x->data<T>();
      T* yd = y->data<T>();
      for (int64_t pl = 0; pl < planes; ++pl) {
        C best = static_cast<C>(xd[pl * plane]);
        for (int64_t i = 1; i < plane; ++i) {
          const C v = static_cast<C>(xd[pl * plane + i]);
          if (v > best) best = v;
        }
        yd[pl] = static_cast<T>(best);
      }
    });
    return Status();
  }
  const std::vector<double> xv = nn::to_doubles(*x);
  std::vector<double> yv(planes);
  for (int64_t pl = 0; pl < planes; ++pl) {
    double sum = 0;
    for (int64_t i = 0; i < plane; ++i) {
      const double v = xv[pl * plane + i];
      sum += kind == GlobalKind::kLp ? std::pow(std::fabs(v), p) : v;
    }
    yv[pl] = kind == GlobalKind::kLp ? std::pow(sum, 1.0 / p) : sum / static_cast<double>(plane);
  }
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status global_pool_infer(InferContext& ctx) {
  const ir::Value* x = ctx.input(0);
  if (!x || !x->shape || x->shape->size() < 2) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status();
  }
  Shape out(x->shape->size(), Dim(1));
  out[0] = (*x->shape)[0];
  out[1] = (*x->shape)[1];
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}
}  // namespace

void register_global_pool(OpRegistry& r) {
  r.add(OpSchema{.op_type = "GlobalAveragePool", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = global_pool_infer,
                 .kernel = [](KernelContext& c) { return global_pool_kernel(c, GlobalKind::kAverage); }});
  r.add(OpSchema{.op_type = "GlobalMaxPool", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = global_pool_infer,
                 .kernel = [](KernelContext& c) { return global_pool_kernel(c, GlobalKind::kMax); }});
  r.add(OpSchema{.op_type = "GlobalLpPool", .since_version = 2, .min_inputs = 1, .max_inputs = 1,
                 .infer = global_pool_infer,
                 .kernel = [](KernelContext& c) { return global_pool_kernel(c, GlobalKind::kLp); }});
}

}  // namespace ferry::ops
