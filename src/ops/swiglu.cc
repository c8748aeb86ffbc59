// SwiGLU (opset 28): y = a * sigmoid(alpha * a) * b, with A and B of identical shape (no broadcasting).
// The sigmoid is rounded to the input dtype before the products, as the reference does.
#include <cmath>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/control_numeric.h"

namespace ferry::ops {
namespace {

Status swiglu_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) return Status::invalid("SwiGLU inputs must share one dtype");
  if (a.dims() != b.dims())
    return Status::invalid("SwiGLU inputs must have identical shapes, got " + a.describe() + " and " + b.describe());
  const DType T = a.dtype();
  if (!is_floating(T)) return Status::invalid("SwiGLU needs floating inputs");
  const double alpha = ctx.node().attr_float("alpha", 1.0f);
  std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector(), y(av.size());
  for (size_t i = 0; i < av.size(); ++i) {
    const double sig = round_to(T, 1.0 / (1.0 + std::exp(round_to(T, -alpha * av[i]))));
    y[i] = round_to(T, round_to(T, av[i] * sig) * bv[i]);
  }
  FERRY_ASSIGN_OR_RETURN(Tensor out, from_doubles(T, a.dims(), y));
  ctx.set_output(0, std::move(out));
  return Status();
}

}  // namespace

void register_swiglu(OpRegistry& r) {
  r.add(OpSchema{.op_type = "SwiGLU", .since_version = 28, .min_inputs = 2, .max_inputs = 2,
                 .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); }, .kernel = swiglu_kernel});
}

}  // namespace ferry::ops
