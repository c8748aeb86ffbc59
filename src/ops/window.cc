// Window functions (opset 17): HannWindow, HammingWindow, BlackmanWindow. Input: the window length
// (integer scalar). `periodic` (default 1) divides by N instead of N-1; `output_datatype` picks the
// element type (default float).
#include <cmath>

#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

enum class Window { kHann, kHamming, kBlackman };

double window_value(Window w, int64_t n, double denom) {
  // A one-point symmetric window has N-1 = 0; it is 1 by convention (as torch and scipy do).
  if (denom == 0) return 1.0;
  const double x = 2 * M_PI * static_cast<double>(n) / denom;
  switch (w) {
    case Window::kHann: {
      const double s = std::sin(M_PI * static_cast<double>(n) / denom);
      return s * s;
    }
    case Window::kHamming: return 25.0 / 46.0 - (21.0 / 46.0) * std::cos(x);
    case Window::kBlackman: return 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
  }
  return 0;
}

Status window_kernel(KernelContext& ctx, Window w) {
  FERRY_ASSIGN_OR_RETURN(int64_t size, scalar_int(ctx.input(0), "window size"));
  if (size < 0) return Status::invalid("window size must be non-negative, got " + std::to_string(size));
  FERRY_ASSIGN_OR_RETURN(DType dt, dtype_from_onnx(ctx.node().attr_int("output_datatype", 1)));
  const bool periodic = ctx.node().attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  FERRY_ASSIGN_OR_RETURN(Tensor values, Tensor::create(DType::kFloat64, {size}));
  for (int64_t n = 0; n < size; ++n) values.data<double>()[n] = window_value(w, n, denom);
  ctx.set_output(0, values.cast(dt));
  return Status();
}

Status window_infer(InferContext& ctx) {
  auto dt = dtype_from_onnx(ctx.node().attr_int("output_datatype", 1));
  const Tensor* size = ctx.input_constant(0);
  std::optional<Shape> shape = Shape{Dim()};
  if (size && size->numel() == 1 && size->as_int64(0) >= 0) shape = Shape{Dim(size->as_int64(0))};
  ctx.set_output(0, dt.ok() ? *dt : DType::kUndefined, shape);
  return Status();
}

void add_window(OpRegistry& r, const char* name, Window w) {
  r.add(OpSchema{.op_type = name, .since_version = 17, .min_inputs = 1, .max_inputs = 1, .infer = window_infer,
                 .kernel = [w](KernelContext& ctx) { return window_kernel(ctx, w); }});
}

}  // namespace

void register_window(OpRegistry& r) {
  add_window(r, "HannWindow", Window::kHann);
  add_window(r, "HammingWindow", Window::kHamming);
  add_window(r, "BlackmanWindow", Window::kBlackman);
}

}  // namespace ferry::ops
