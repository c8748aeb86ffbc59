// LpNormalization: x / ||x||_p along `axis` (default -1), p in {1, 2}. A zero norm yields 0 rather than
// NaN, as the ONNX reference does.
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Status lp_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) return Status::invalid("LpNormalization: p must be 1 or 2, got " + std::to_string(p));
  if (x.rank() == 0) return Status::invalid("LpNormalization needs an input of rank >= 1");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx.node(), -1, x.rank()));
  if (!is_floating(x.dtype())) return Status::unsupported("LpNormalization: unsupported dtype " + x.describe());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));
  const AxisSplit s = split_at_axis(x.dims(), axis);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y->data<T>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        double norm = 0;
        for (int64_t k = 0; k < s.n; ++k) {
          const double v = to_double(px[s.at(o, k, i)]);
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < s.n; ++k)
          py[s.at(o, k, i)] = from_double<T>(norm == 0 ? 0.0 : to_double(px[s.at(o, k, i)]) / norm);
      }
    }
  });
  return Status();
}

}  // namespace

void register_lp_normalization(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "LpNormalization",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = lp_norm_kernel,
  });
}

}  // namespace ferry::ops
