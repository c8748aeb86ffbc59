// Binarizer (ai.onnx.ml 1): y = x > threshold ? 1 : 0, in x's dtype (NaN gives 0, as in the reference).
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"

namespace ferry::ops {
namespace {

Status binarizer_kernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input_value(0)->is_tensor()) return Status::invalid("input X must be a tensor");
  const Tensor& x = ctx.input(0);
  const double threshold = ctx.node().attr_float("threshold", 0.0f);
  Status st;
  const DType dt = x.dtype();
  const bool allowed = dt == DType::kFloat32 || dt == DType::kFloat64 || dt == DType::kInt32 || dt == DType::kInt64;
  if (!allowed) return Status::unsupported("Binarizer takes float, double, int32 or int64; got " + x.describe());
  dispatch_numeric(dt, [&](auto tag) {
    using T = decltype(tag);
    // Compared in double, as numpy compares an integer array with a Python float.
    auto y = unary_map<T, T>(x, dt, [&](T v) { return static_cast<double>(v) > threshold ? T(1) : T(0); });
    if (!y.ok()) {
      st = y.status();
      return;
    }
    ctx.set_output(0, std::move(y).value());
  });
  return st;
}

}  // namespace

void register_ml_binarizer(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Binarizer",
      .domain = "ai.onnx.ml",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = binarizer_kernel,
  });
}

}  // namespace ferry::ops
