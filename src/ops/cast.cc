// Type conversion: Cast (to = ONNX element type), CastLike (to = the second input's dtype) and BitCast
// (reinterpret the bytes as another type of the same width).
// Cast follows numpy's astype: float -> int truncates toward zero (NaN -> 0, values beyond int64
// saturate), to bool is "!= 0", double -> float16/bfloat16 rounds once. `saturate` and `round_mode`
// only concern float8 targets, which ferry does not have (nor int4/int2, float4 or string): such
// targets are an error naming the type.
#include <cstring>

#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

Result<Tensor> cast_tensor(const Tensor& x, DType to) {
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(to, x.dims()));
  dispatch_in(AllTypes{}, x.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_in(AllTypes{}, to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* src = x.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) dst[i] = convert<To, From>(src[i]);
    });
  });
  return out;
}

Result<DType> to_attr(const ir::Node& node) {
  if (!node.has_attr("to")) return Status::invalid(node.op_type + ": attribute 'to' is required");
  return dtype_from_onnx_elem_type(node.attr_int("to", 0), node.op_type + " to");
}

Status cast_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(DType to, to_attr(ctx.node()));
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(Tensor out, cast_tensor(*x, to));
  ctx.set_output(0, std::move(out));
  return Status();
}

Status cast_infer(InferContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(DType to, to_attr(ctx.node()));
  const ir::Value* v = ctx.input(0);
  ctx.set_output(0, to, v ? v->shape : std::nullopt);
  return Status();
}

Status cast_like_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(const Tensor* like, tensor_input(ctx, 1));
  FERRY_ASSIGN_OR_RETURN(Tensor out, cast_tensor(*x, like->dtype()));
  ctx.set_output(0, std::move(out));
  return Status();
}

Status cast_like_infer(InferContext& ctx) {
  const ir::Value* v = ctx.input(0);
  ctx.set_output(0, ctx.input_dtype(1), v ? v->shape : std::nullopt);
  return Status();
}

Status bitcast_check(DType from, DType to) {
  if (dtype_size(from) != dtype_size(to))
    return Status::invalid("BitCast: " + std::string(dtype_name(from)) + " (" + std::to_string(dtype_size(from) * 8) +
                           " bits) and " + std::string(dtype_name(to)) + " (" + std::to_string(dtype_size(to) * 8) +
                           " bits) differ in width");
  return Status();
}

Status bitcast_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(DType to, to_attr(ctx.node()));
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  FERRY_RETURN_IF_ERROR(bitcast_check(x->dtype(), to));
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(to, x->dims()));
  if (out.nbytes()) std::memcpy(out.raw(), x->raw(), out.nbytes());
  if (to == DType::kBool) {
    // A C++ bool must hold 0 or 1; any other byte reads as true.
    uint8_t* p = static_cast<uint8_t*>(out.raw());
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = p[i] != 0;
  }
  ctx.set_output(0, std::move(out));
  return Status();
}

Status bitcast_infer(InferContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(DType to, to_attr(ctx.node()));
  if (ctx.input_dtype(0) != DType::kUndefined) FERRY_RETURN_IF_ERROR(bitcast_check(ctx.input_dtype(0), to));
  const ir::Value* v = ctx.input(0);
  ctx.set_output(0, to, v ? v->shape : std::nullopt);
  return Status();
}
}  // namespace

void register_cast(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Cast", .since_version = 6, .min_inputs = 1, .max_inputs = 1,
                 .infer = cast_infer, .kernel = cast_kernel});
  r.add(OpSchema{.op_type = "CastLike", .since_version = 15, .min_inputs = 2, .max_inputs = 2,
                 .infer = cast_like_infer, .kernel = cast_like_kernel});
  r.add(OpSchema{.op_type = "BitCast", .since_version = 26, .min_inputs = 1, .max_inputs = 1,
                 .infer = bitcast_infer, .kernel = bitcast_kernel});
}

}  // namespace ferry::ops
