// Clip: limits values to [min, max]. Opsets 6-10 take float attributes; from 11 the bounds are optional
// scalar inputs of the input's type (integers allowed from 12). With min > max every value becomes max
// (np.clip's minimum(maximum(x, min), max)); NaN stays NaN.
#include <limits>

#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

// Bound input i as a scalar of T, if given.
template <class T>
Result<std::optional<T>> bound_input(const KernelContext& ctx, int i, const Tensor& x) {
  if (!ctx.has_input(i)) return std::optional<T>();
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, tensor_input(ctx, i));
  FERRY_RETURN_IF_ERROR(check_same_dtype(ctx, x, *b, 0, i));
  if (b->numel() != 1)
    return Status::invalid("Clip: input " + std::to_string(i) + " (" + (i == 1 ? "min" : "max") +
                           ") must be a scalar, got " + b->describe());
  return std::optional<T>(b->data<T>()[0]);
}

Status clip_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  if (ctx.opset() < 11 && !is_floating(x->dtype()))
    return Status::invalid("Clip: integer inputs need opset 11 or later");
  Status st;
  bool ok = dispatch_in(NumericTypes{}, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if (ctx.opset() < 11) {
      if constexpr (is_float_like_v<T>) {
        lo = static_cast<C>(ctx.node().attr_float("min", std::numeric_limits<float>::lowest()));
        hi = static_cast<C>(ctx.node().attr_float("max", std::numeric_limits<float>::max()));
      }
    } else {
      auto lo_in = bound_input<T>(ctx, 1, *x);
      auto hi_in = bound_input<T>(ctx, 2, *x);
      if (!lo_in.ok()) return void(st = lo_in.status());
      if (!hi_in.ok()) return void(st = hi_in.status());
      if (*lo_in) lo = widen(**lo_in);
      if (*hi_in) hi = widen(**hi_in);
    }
    Result<Tensor> out = unary_map<T, T>(*x, x->dtype(), [&](T v) {
      C c = widen(v);
      if (c < lo) c = lo;
      if (c > hi) c = hi;
      return static_cast<T>(c);
    });
    if (!out.ok()) return void(st = out.status());
    ctx.set_output(0, std::move(out).value());
  });
  if (!ok) return unsupported_dtype(ctx, x->dtype());
  return st;
}
}  // namespace

void register_clip(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Clip",
      .since_version = 6,
      .min_inputs = 1,
      .max_inputs = 3,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = clip_kernel,
  });
}

}  // namespace ferry::ops
