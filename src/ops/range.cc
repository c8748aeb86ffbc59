// Range: start, start+delta, ... up to (excluding) limit, like numpy.arange.
#include <cmath>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

constexpr int64_t kMaxRangeElems = int64_t{1} << 34;

// The element count numpy.arange gives, or an error for a zero delta or an absurd count.
Result<int64_t> range_count(double start, double limit, double delta) {
  if (delta == 0) return Status::invalid("Range delta must not be 0");
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return Status::invalid("Range start, limit and delta must be finite");
  double n = std::ceil((limit - start) / delta);
  if (n <= 0) return int64_t{0};
  if (n > static_cast<double>(kMaxRangeElems)) return Status::invalid("Range would have too many elements");
  return static_cast<int64_t>(n);
}

Result<int64_t> int_range_count(int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0) return Status::invalid("Range delta must not be 0");
  // In long double to avoid overflow on extreme values.
  long double span = static_cast<long double>(limit) - static_cast<long double>(start);
  long double n = std::ceil(span / static_cast<long double>(delta));
  if (n <= 0) return int64_t{0};
  if (n > static_cast<long double>(kMaxRangeElems)) return Status::invalid("Range would have too many elements");
  return static_cast<int64_t>(n);
}

Status range_kernel(KernelContext& ctx) {
  const Tensor* in[3];
  const char* names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    FERRY_ASSIGN_OR_RETURN(in[i], tensor_input(ctx, i, names[i]));
    if (in[i]->numel() != 1) return Status::invalid(std::string(names[i]) + " must be a scalar, got " + in[i]->describe());
    if (in[i]->dtype() != in[0]->dtype())
      return Status::invalid(std::string(names[i]) + " is " + dtype_str(in[i]->dtype()) + " but start is " +
                             dtype_str(in[0]->dtype()));
  }
  const DType dt = in[0]->dtype();
  Status st;
  bool ok = dispatch_numeric(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const int64_t s = in[0]->as_int64(0), l = in[1]->as_int64(0), d = in[2]->as_int64(0);
      auto n = int_range_count(s, l, d);
      if (!n.ok()) { st = n.status(); return; }
      auto out = ctx.allocate_output(0, dt, {*n});
      if (!out.ok()) { st = out.status(); return; }
      Tensor* ot = *out;
      T* o = ot->data<T>();
      for (int64_t i = 0; i < *n; ++i) o[i] = static_cast<T>(s + i * d);
    } else {
      // numpy fills with start + i * ((start + delta) - start) in the compute type: double for
      // float32/float64 (Python floats), float for the halves (stash_type float).
      using C = std::conditional_t<is_half_v<T>, float, double>;
      const C s = static_cast<C>(in[0]->as_double(0)), l = static_cast<C>(in[1]->as_double(0)),
              d = static_cast<C>(in[2]->as_double(0));
      auto n = range_count(s, l, d);
      if (!n.ok()) { st = n.status(); return; }
      auto out = ctx.allocate_output(0, dt, {*n});
      if (!out.ok()) { st = out.status(); return; }
      const C step = static_cast<C>(s + d) - s;
      Tensor* ot = *out;
      T* o = ot->data<T>();
      for (int64_t i = 0; i < *n; ++i) o[i] = T(static_cast<C>(s + static_cast<C>(i) * step));
    }
  });
  if (!ok) return unsupported_dtype("Range", dt);
  return st;
}

Status range_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::optional<Tensor> v[3];
  for (int i = 0; i < 3; ++i) v[i] = known_value(ctx, i);
  if (v[0] && v[1] && v[2] && v[0]->numel() == 1 && v[1]->numel() == 1 && v[2]->numel() == 1) {
    Result<int64_t> n = is_integer(v[0]->dtype())
                            ? int_range_count(v[0]->as_int64(0), v[1]->as_int64(0), v[2]->as_int64(0))
                            : range_count(v[0]->as_double(0), v[1]->as_double(0), v[2]->as_double(0));
    if (n.ok()) {
      ctx.set_output(0, dt, Shape{Dim(*n)});
      return Status();
    }
  }
  ctx.set_output(0, dt, Shape{Dim()});
  return Status();
}
}  // namespace

void register_range(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Range", .since_version = 11, .min_inputs = 3, .max_inputs = 3,
                 .infer = range_infer, .kernel = range_kernel});
}

}  // namespace ferry::ops
