// Variadic elementwise ops with numpy broadcasting over all inputs: Max Min Sum Mean.
// Inputs are folded left to right in the storage type (the reference accumulates in place, so a
// float16 sum rounds after every addition). Max and Min propagate NaN like np.maximum/np.minimum.
#include <cmath>

#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

template <class List, class F>
Result<Tensor> fold_inputs(KernelContext& ctx, List types, F f) {
  if (ctx.num_inputs() < 1) return Status::invalid(ctx.node().op_type + ": needs at least one input");
  FERRY_ASSIGN_OR_RETURN(const Tensor* first, tensor_input(ctx, 0));
  if (!dispatch_in(types, first->dtype(), [](auto) {})) return unsupported_dtype(ctx, first->dtype());
  Tensor acc = first->clone();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    FERRY_ASSIGN_OR_RETURN(const Tensor* next, tensor_input(ctx, i));
    FERRY_RETURN_IF_ERROR(check_same_dtype(ctx, *first, *next, 0, i));
    bool ok = false;
    FERRY_ASSIGN_OR_RETURN(acc, broadcast_same(acc, *next, types, f, &ok));
  }
  return acc;
}

template <class C>
C max_value(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}

template <class C>
C min_value(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

template <class C>
C add_value(C a, C b) {
  if constexpr (is_int_v<C>)
    return wrap_add(a, b);
  else
    return a + b;
}

template <class List, class F>
KernelFn fold_kernel(List types, F f) {
  return [types, f](KernelContext& ctx) -> Status {
    FERRY_ASSIGN_OR_RETURN(Tensor out, fold_inputs(ctx, types, f));
    ctx.set_output(0, std::move(out));
    return Status();
  };
}

Status mean_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(Tensor sum, fold_inputs(ctx, FloatTypes{}, [](auto a, auto b) { return a + b; }));
  const int n = ctx.num_inputs();
  dispatch_in(FloatTypes{}, sum.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = sum.data<T>();
    for (int64_t i = 0; i < sum.numel(); ++i) p[i] = static_cast<T>(widen(p[i]) / static_cast<compute_t<T>>(n));
  });
  ctx.set_output(0, std::move(sum));
  return Status();
}

void add_variadic_schema(OpRegistry& r, const std::string& op, KernelFn kernel) {
  r.add(OpSchema{
      .op_type = op,
      .since_version = 6,
      .min_inputs = 1,
      .infer = [](InferContext& ctx) { return infer_broadcast(ctx); },
      .kernel = std::move(kernel),
  });
}
}  // namespace

void register_variadic(OpRegistry& r) {
  add_variadic_schema(r, "Max", fold_kernel(NumericTypes{}, [](auto a, auto b) { return max_value(a, b); }));
  add_variadic_schema(r, "Min", fold_kernel(NumericTypes{}, [](auto a, auto b) { return min_value(a, b); }));
  // The spec lists only float types for Sum; integers are accepted too (wrapping), as runtimes do.
  add_variadic_schema(r, "Sum", fold_kernel(NumericTypes{}, [](auto a, auto b) { return add_value(a, b); }));
  add_variadic_schema(r, "Mean", mean_kernel);
}

}  // namespace ferry::ops
