// CumSum (opset 11) and CumProd (opset 26): running sum / product along the axis given by the second
// input (a scalar or one-element int32/int64 tensor). exclusive=1 leaves out the current element (the
// first output is 0 or 1); reverse=1 runs from the end of the axis. Floats accumulate in double, integers
// wrap around like fixed-width arithmetic.
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

template <class T>
void cumulate(const Tensor& x, const AxisSplit& s, bool product, bool exclusive, bool reverse, Tensor& out) {
  using A = acc_t<T>;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      A acc = product ? A{1} : A{0};
      for (int64_t step = 0; step < s.n; ++step) {
        const int64_t k = reverse ? s.n - 1 - step : step;
        const int64_t e = s.at(o, k, i);
        A v;
        if constexpr (std::is_same_v<A, double>) v = to_double(px[e]);
        else v = static_cast<A>(px[e]);
        auto apply = [&] {
          if constexpr (std::is_integral_v<A>)
            acc = static_cast<A>(product ? static_cast<uint64_t>(acc) * static_cast<uint64_t>(v)
                                         : static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
          else
            acc = product ? acc * v : acc + v;
        };
        if (!exclusive) apply();
        if constexpr (std::is_same_v<A, double>) po[e] = from_double<T>(acc);
        else po[e] = static_cast<T>(acc);
        if (exclusive) apply();
      }
    }
  }
}

Status cum_kernel(KernelContext& ctx, bool product) {
  const std::string op = product ? "CumProd" : "CumSum";
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return Status::invalid(op + " needs the axis input");
  const Tensor& axis_t = ctx.input(1);
  if (axis_t.numel() != 1 || axis_t.rank() > 1 || is_floating(axis_t.dtype()))
    return Status::invalid(op + ": axis must be an integer scalar, got " + axis_t.describe());
  if (x.rank() == 0) return Status::invalid(op + " needs an input of rank >= 1");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_t.as_int64(0), x.rank()));
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), x.dims()));
  const AxisSplit s = split_at_axis(x.dims(), axis);
  bool handled = dispatch_numeric(x.dtype(), [&](auto tag) {
    cumulate<decltype(tag)>(x, s, product, exclusive, reverse, *out);
  });
  if (!handled) return Status::unsupported(op + ": unsupported dtype " + x.describe());
  return Status();
}

}  // namespace

void register_cum_sum(OpRegistry& r) {
  for (bool product : {false, true}) {
    r.add(OpSchema{
        .op_type = product ? "CumProd" : "CumSum",
        .since_version = product ? 26 : 11,
        .min_inputs = 2,
        .max_inputs = 2,
        .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
        .kernel = [product](KernelContext& ctx) { return cum_kernel(ctx, product); },
    });
  }
}

}  // namespace ferry::ops
