// The Reduce* family: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum
// ReduceLogSumExp ReduceSumSquare. They differ only in the per-element map, the combine step and the
// finish step, so one kernel serves all of them.
//
// Axes come from the `axes` attribute before the opset where they became an input (13 for ReduceSum, 18 for
// the rest). Empty or absent axes reduce everything, unless noop_with_empty_axes (input form only) is set,
// in which case nothing is reduced — each output element then "reduces" one input element, so ReduceL1
// still takes abs, ReduceSumSquare still squares (what the ONNX reference computes).
// A reduction over no elements yields the identity of the combine step (0 for sums, 1 for products,
// -inf/+inf or the integer limits for max/min, -inf for the log reductions, NaN for the mean).
#include <cmath>
#include <limits>
#include <string>

#include "ops/op.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceSpec {
  const char* op_type;
  ReduceKind kind;
  int axes_input_since;  // first opset where axes is an input instead of an attribute
};

constexpr ReduceSpec kReduceSpecs[] = {
    {"ReduceSum", ReduceKind::kSum, 13},
    {"ReduceMean", ReduceKind::kMean, 18},
    {"ReduceMax", ReduceKind::kMax, 18},
    {"ReduceMin", ReduceKind::kMin, 18},
    {"ReduceProd", ReduceKind::kProd, 18},
    {"ReduceL1", ReduceKind::kL1, 18},
    {"ReduceL2", ReduceKind::kL2, 18},
    {"ReduceLogSum", ReduceKind::kLogSum, 18},
    {"ReduceLogSumExp", ReduceKind::kLogSumExp, 18},
    {"ReduceSumSquare", ReduceKind::kSumSquare, 18},
};

// What the node asks to reduce. `axes` empty and !noop means all axes.
struct AxesRequest {
  bool known = true;  // false when the axes input is not a constant (inference only)
  bool noop = false;
  std::vector<int64_t> axes;
};

// axes_tensor: the runtime axes input (kernel) or its constant value (inference); null when absent or
// not constant. `axes_input_present` tells the two apart.
AxesRequest request_axes(const ir::Node& node, const ReduceSpec& spec, bool axes_input_present,
                         const Tensor* axes_tensor) {
  AxesRequest req;
  if (node.opset < spec.axes_input_since || (!axes_input_present && node.has_attr("axes"))) {
    // Attribute form (also accepted from models that keep the attribute past the opset change).
    req.axes = node.attr_ints("axes");
    return req;
  }
  const bool noop_with_empty_axes = node.attr_int("noop_with_empty_axes", 0) != 0;
  if (axes_input_present) {
    if (!axes_tensor) {
      req.known = false;
      return req;
    }
    req.axes = axes_tensor->to_int64_vector();
  }
  req.noop = req.axes.empty() && noop_with_empty_axes;
  return req;
}

Result<std::vector<bool>> request_to_mask(const AxesRequest& req, int64_t rank) {
  if (req.noop) return std::vector<bool>(static_cast<size_t>(rank), false);
  if (req.axes.empty()) return std::vector<bool>(static_cast<size_t>(rank), true);
  return axes_to_mask(req.axes, rank);
}

bool allows_bool(ReduceKind k) { return k == ReduceKind::kMax || k == ReduceKind::kMin; }

// Starting value of the accumulator.
template <class T, class A>
A reduce_init(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kProd: return A{1};
    case ReduceKind::kMax:
      if constexpr (std::is_same_v<A, double>) return -std::numeric_limits<double>::infinity();
      else return static_cast<A>(std::numeric_limits<T>::lowest());
    case ReduceKind::kMin:
      if constexpr (std::is_same_v<A, double>) return std::numeric_limits<double>::infinity();
      else return static_cast<A>(std::numeric_limits<T>::max());
    default: return A{0};
  }
}

// Integer sums and products wrap around like the reference's fixed-width numpy arithmetic; doing them in
// uint64 keeps the wrap defined behaviour.
template <class A>
A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <class A>
A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

template <class A>
A combine(ReduceKind kind, A acc, A v) {
  switch (kind) {
    case ReduceKind::kMax:
      if constexpr (std::is_same_v<A, double>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
      }
      return v > acc ? v : acc;
    case ReduceKind::kMin:
      if constexpr (std::is_same_v<A, double>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
      }
      return v < acc ? v : acc;
    case ReduceKind::kProd: return wrap_mul(acc, v);
    case ReduceKind::kL1:
      if constexpr (std::is_signed_v<A>) return wrap_add(acc, v < 0 ? wrap_mul(v, A{-1}) : v);
      else return wrap_add(acc, v);
    case ReduceKind::kL2:
    case ReduceKind::kSumSquare: return wrap_add(acc, wrap_mul(v, v));
    default: return wrap_add(acc, v);  // Sum, Mean, LogSum (LogSumExp is handled separately)
  }
}

template <class T, class A>
T finish(ReduceKind kind, A acc, int64_t count) {
  switch (kind) {
    case ReduceKind::kMean:
      if constexpr (std::is_same_v<A, double>) return from_double<T>(acc / static_cast<double>(count));
      else return count == 0 ? T{0} : static_cast<T>(acc / static_cast<A>(count));
    case ReduceKind::kL2: return from_double<T>(std::sqrt(static_cast<double>(acc)));
    case ReduceKind::kLogSum: return from_double<T>(std::log(static_cast<double>(acc)));
    default:
      if constexpr (std::is_same_v<A, double>) return from_double<T>(acc);
      else return static_cast<T>(acc);
  }
}

template <class T>
void reduce_typed(ReduceKind kind, const Tensor& x, const std::vector<bool>& mask, Tensor& out) {
  using A = acc_t<T>;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const int64_t out_n = out.numel();
  int64_t count = 1;  // elements per output
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) count *= x.dims()[d];

  if (kind == ReduceKind::kLogSumExp) {
    // Shift by the largest finite value (as the reference does) so exp cannot overflow.
    std::vector<double> mx(out_n, -std::numeric_limits<double>::infinity()), sum(out_n, 0.0);
    for_each_reduce(x.dims(), mask, [&](int64_t i, int64_t o) {
      double v = to_double(px[i]);
      if (std::isfinite(v) && v > mx[o]) mx[o] = v;
    });
    for_each_reduce(x.dims(), mask, [&](int64_t i, int64_t o) { sum[o] += std::exp(to_double(px[i]) - mx[o]); });
    for (int64_t o = 0; o < out_n; ++o)
      po[o] = from_double<T>(count == 0 ? -std::numeric_limits<double>::infinity() : std::log(sum[o]) + mx[o]);
    return;
  }

  std::vector<A> acc(out_n, reduce_init<T, A>(kind));
  for_each_reduce(x.dims(), mask, [&](int64_t i, int64_t o) {
    A v;
    if constexpr (std::is_same_v<A, double>) v = to_double(px[i]);
    else v = static_cast<A>(px[i]);
    acc[o] = combine(kind, acc[o], v);
  });
  for (int64_t o = 0; o < out_n; ++o) po[o] = finish<T, A>(kind, acc[o], count);
}

Status reduce_kernel(KernelContext& ctx, const ReduceSpec& spec) {
  const Tensor& x = ctx.input(0);
  const bool axes_present = ctx.has_input(1);
  AxesRequest req = request_axes(ctx.node(), spec, axes_present, axes_present ? &ctx.input(1) : nullptr);
  FERRY_ASSIGN_OR_RETURN(std::vector<bool> mask, request_to_mask(req, x.rank()));
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), reduced_dims(x.dims(), mask, keepdims)));
  if (x.dtype() == DType::kBool && !allows_bool(spec.kind))
    return Status::unsupported(std::string(spec.op_type) + " does not take bool input");
  bool handled = dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_typed<T>(spec.kind, x, mask, *out);
  });
  if (!handled) return Status::unsupported(std::string(spec.op_type) + ": unsupported dtype " +
                                           std::string(dtype_name(x.dtype())));
  return Status();
}

Status reduce_infer(InferContext& ctx, const ReduceSpec& spec) {
  const DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const Shape& shape = **in;
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  const bool axes_present = ctx.has_input(1);
  AxesRequest req = request_axes(ctx.node(), spec, axes_present, axes_present ? ctx.input_constant(1) : nullptr);
  if (!req.known) {
    // Unknown axes: with keepdims the rank survives, nothing else is certain.
    ctx.set_output(0, dt, keepdims ? std::optional<Shape>(Shape(shape.size())) : std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<bool> mask, request_to_mask(req, static_cast<int64_t>(shape.size())));
  ctx.set_output(0, dt, reduced_shape(shape, mask, keepdims));
  return Status();
}

}  // namespace

void register_reduce(OpRegistry& r) {
  for (const ReduceSpec& spec : kReduceSpecs) {
    r.add(OpSchema{
        .op_type = spec.op_type,
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 2,
        .infer = [&spec](InferContext& ctx) { return reduce_infer(ctx, spec); },
        .kernel = [&spec](KernelContext& ctx) { return reduce_kernel(ctx, spec); },
    });
  }
}

}  // namespace ferry::ops
