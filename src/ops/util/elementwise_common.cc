#include "ops/util/elementwise_common.h"

#include "core/onnx_dtype.h"

#include <cfloat>
#include <cstring>

namespace ferry::ops::ew {

namespace {
// Rounds to float with "round to odd": truncate, and set the last mantissa bit when inexact. A second
// rounding of that float to a type with at most 22 mantissa bits is then the correct rounding of `d`.
float round_to_odd_float(double d) {
  if (std::isnan(d) || std::isinf(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if (std::isinf(f)) {
    f = std::copysign(FLT_MAX, static_cast<float>(d));
  } else if (std::fabs(static_cast<double>(f)) > std::fabs(d)) {
    f = std::nextafter(f, 0.0f);
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= 1u;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float16 double_to_float16(double d) { return float16(round_to_odd_float(d)); }
bfloat16 double_to_bfloat16(double d) { return bfloat16(round_to_odd_float(d)); }

Result<DType> dtype_from_onnx_elem_type(int64_t t, const std::string& what) {
  return dtype_from_onnx(t).with_context(what);
}

Result<const Tensor*> tensor_input(const KernelContext& ctx, int i) {
  if (!ctx.has_input(i))
    return Status::invalid(ctx.node().op_type + ": input " + std::to_string(i) + " is missing");
  const RtValue* v = ctx.input_value(i);
  if (!v->is_tensor())
    return Status::invalid(ctx.node().op_type + ": input " + std::to_string(i) + " must be a tensor");
  return &v->tensor;
}

Status unsupported_dtype(const KernelContext& ctx, DType t, int input) {
  return Status::unsupported(ctx.node().op_type + " does not support dtype " + std::string(dtype_name(t)) +
                             " (input " + std::to_string(input) + ")");
}

Status check_same_dtype(const KernelContext& ctx, const Tensor& a, const Tensor& b, int ia, int ib) {
  if (a.dtype() == b.dtype()) return Status();
  return Status::invalid(ctx.node().op_type + ": inputs " + std::to_string(ia) + " and " + std::to_string(ib) +
                         " must have the same dtype, got " + std::string(dtype_name(a.dtype())) + " and " +
                         std::string(dtype_name(b.dtype())));
}

void add_unary_schema(OpRegistry& r, const std::string& op, int since, KernelFn kernel, int until) {
  r.add(OpSchema{
      .op_type = op,
      .since_version = since,
      .until_version = until,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
      .kernel = std::move(kernel),
  });
}

void add_binary_schema(OpRegistry& r, const std::string& op, int since, KernelFn kernel, DType out, int until) {
  r.add(OpSchema{
      .op_type = op,
      .since_version = since,
      .until_version = until,
      .min_inputs = 2,
      .max_inputs = 2,
      .infer = [out](InferContext& ctx) { return infer_broadcast(ctx, out); },
      .kernel = std::move(kernel),
  });
}

}  // namespace ferry::ops::ew
