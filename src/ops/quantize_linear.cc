// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: linear (de)quantization with per-tensor,
// per-axis (1-D scale along `axis`) and blocked (opset 21+: `block_size` along `axis`) parameters.
// Quantized types are int8/uint8/int16/uint16 (and int32 as a DequantizeLinear input); float8, int4,
// int2 and float4 are not ferry dtypes and are rejected with a clear error.
#include <cmath>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {

// Maps each element of x to the index of its scale / zero point.
struct ParamLayout {
  int64_t outer = 1, A = 1, inner = 1, blocks = 0, block_size = 0;
  enum class Kind { kTensor, kAxis, kBlocked } kind = Kind::kTensor;
  int64_t index(int64_t i) const {
    switch (kind) {
      case Kind::kTensor: return 0;
      case Kind::kAxis: return (i / inner) % A;
      case Kind::kBlocked: {
        const int64_t o = i / (A * inner), a = (i / inner) % A, r = i % inner;
        return (o * blocks + a / block_size) * inner + r;
      }
    }
    return 0;
  }
};

Result<ParamLayout> param_layout(const KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  const std::string& op = ctx.node().op_type;
  ParamLayout L;
  const int64_t block_size = ctx.opset() >= 21 ? ctx.node().attr_int("block_size", 0) : 0;
  if (block_size < 0) return Status::invalid(op + ": block_size must not be negative");
  // A one-element scale is per tensor whatever its rank or block_size (as in the reference).
  if (scale.numel() == 1) return L;
  if (x.rank() == 0) return Status::invalid(op + ": a per-axis scale needs a non-scalar input");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 1), x.rank()));
  for (int i = 0; i < axis; ++i) L.outer *= x.dim(i);
  L.A = x.dim(static_cast<int>(axis));
  for (int i = static_cast<int>(axis) + 1; i < x.rank(); ++i) L.inner *= x.dim(i);
  if (block_size == 0) {
    if (scale.rank() != 1 || scale.numel() != L.A)
      return Status::invalid(op + ": scale " + scale.describe() + " must be a scalar or a 1-D tensor of " +
                             std::to_string(L.A) + " values (x " + x.describe() + ", axis " + std::to_string(axis) + ")");
    L.kind = ParamLayout::Kind::kAxis;
    return L;
  }
  L.kind = ParamLayout::Kind::kBlocked;
  L.block_size = block_size;
  L.blocks = (L.A + block_size - 1) / block_size;
  bool ok = scale.rank() == x.rank();
  for (int i = 0; ok && i < x.rank(); ++i) ok = scale.dim(i) == (i == axis ? L.blocks : x.dim(i));
  if (!ok)
    return Status::invalid(op + ": blocked scale " + scale.describe() + " must match x " + x.describe() +
                           " except for dim " + std::to_string(axis) + " = ceil(" + std::to_string(L.A) + "/" +
                           std::to_string(block_size) + ")");
  return L;
}

// The ONNX TensorProto data type codes ferry can quantize to, and a clear error for the rest.
Result<DType> onnx_quant_type(int64_t code, const std::string& op) {
  switch (code) {
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    case 4: return DType::kUInt16;
    case 5: return DType::kInt16;
    case 17: case 18: case 19: case 20:
      return Status::unsupported(op + ": float8 output types are not supported by ferry");
    case 21: case 22: return Status::unsupported(op + ": int4/uint4 output types are not supported by ferry");
    case 23: return Status::unsupported(op + ": float4e2m1 output type is not supported by ferry");
    case 25: case 26: return Status::unsupported(op + ": int2/uint2 output types are not supported by ferry");
    default: return Status::unsupported(op + ": output_dtype " + std::to_string(code) + " is not a quantized type");
  }
}

bool is_quant_type(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kUInt16;
}

// The more precise of two floating dtypes (numpy's promotion for the division x / scale).
DType wider_float(DType a, DType b) {
  auto rank = [](DType t) { return t == DType::kFloat64 ? 3 : t == DType::kFloat32 ? 2 : is_floating(t) ? 1 : 4; };
  int ra = rank(a), rb = rank(b);
  if (ra == 4 || rb == 4) return DType::kFloat64;  // an integer x: numpy divides in double
  if (ra == 1 && rb == 1) return a;
  return ra >= rb ? a : b;
}

Status quantize_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "x"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* scale, nn::tensor_in(ctx, 1, "y_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* zp, nn::optional_tensor_in(ctx, 2, "y_zero_point"));
  if (!is_floating(x->dtype()) && x->dtype() != DType::kInt32) return nn::bad_dtype(ctx, *x, "x");
  if (!is_floating(scale->dtype())) return nn::bad_dtype(ctx, *scale, "y_scale");
  DType out = DType::kUInt8;
  if (ctx.opset() >= 21 && ctx.node().has_attr("output_dtype") && ctx.node().attr_int("output_dtype", 0) != 0) {
    FERRY_ASSIGN_OR_RETURN(out, onnx_quant_type(ctx.node().attr_int("output_dtype", 0), "QuantizeLinear"));
    if (zp && zp->dtype() != out)
      return Status::invalid("QuantizeLinear: output_dtype differs from y_zero_point's type");
  } else if (zp) {
    out = zp->dtype();
  }
  if (!is_quant_type(out)) return nn::bad_dtype(ctx, *zp, "y_zero_point");
  FERRY_ASSIGN_OR_RETURN(ParamLayout L, param_layout(ctx, *x, *scale));
  if (zp && zp->dims() != scale->dims() && !(zp->numel() == 1 && scale->numel() == 1))
    return Status::invalid("QuantizeLinear: y_zero_point " + zp->describe() + " must have y_scale's shape " +
                           scale->describe());
  std::vector<double> xv = nn::to_doubles(*x), sv = nn::to_doubles(*scale);
  std::vector<int64_t> zv = zp ? nn::to_int64s(*zp) : std::vector<int64_t>(sv.size(), 0);
  const DType div_type = wider_float(x->dtype(), scale->dtype());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, out, x->dims()));
  std::vector<int64_t> q(x->numel());
  for (int64_t i = 0; i < x->numel(); ++i) {
    const int64_t p = L.index(i);
    const double v = nn::round_to_dtype(xv[i] / sv[p], div_type);
    // Round first, then add the zero point, then saturate (as the reference does).
    const double r = std::isnan(v) ? 0.0 : std::nearbyint(v);
    q[i] = nn::saturate_round(r + static_cast<double>(zv[p]), out);
  }
  nn::store_int64s(*y, q.data());
  return Status();
}

Status dequantize_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "x"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* scale, nn::tensor_in(ctx, 1, "x_scale"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* zp, nn::optional_tensor_in(ctx, 2, "x_zero_point"));
  if (!is_quant_type(x->dtype()) && x->dtype() != DType::kInt32) return nn::bad_dtype(ctx, *x, "x");
  if (!is_floating(scale->dtype())) return nn::bad_dtype(ctx, *scale, "x_scale");
  if (zp && zp->dtype() != x->dtype())
    return Status::invalid("DequantizeLinear: x_zero_point must have x's type");
  DType out = scale->dtype();
  if (ctx.opset() >= 23 && ctx.node().attr_int("output_dtype", 0) != 0) {
    const int64_t code = ctx.node().attr_int("output_dtype", 0);
    out = code == 1 ? DType::kFloat32 : code == 10 ? DType::kFloat16 : code == 16 ? DType::kBFloat16 : DType::kUndefined;
    if (out == DType::kUndefined)
      return Status::unsupported("DequantizeLinear: output_dtype " + std::to_string(code) + " is not supported");
  }
  FERRY_ASSIGN_OR_RETURN(ParamLayout L, param_layout(ctx, *x, *scale));
  if (zp && zp->dims() != scale->dims() && !(zp->numel() == 1 && scale->numel() == 1))
    return Status::invalid("DequantizeLinear: x_zero_point " + zp->describe() + " must have x_scale's shape " +
                           scale->describe());
  std::vector<int64_t> xv = nn::to_int64s(*x);
  std::vector<double> sv = nn::to_doubles(*scale);
  std::vector<int64_t> zv = zp ? nn::to_int64s(*zp) : std::vector<int64_t>(sv.size(), 0);
  const DType mul_type = wider_float(DType::kFloat32, scale->dtype());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, out, x->dims()));
  std::vector<double> yv(x->numel());
  for (int64_t i = 0; i < x->numel(); ++i) {
    const int64_t p = L.index(i);
    // The reference subtracts in float32, then multiplies by the scale.
    const double dx = static_cast<float>(static_cast<float>(xv[i]) - static_cast<float>(zv[p]));
    yv[i] = nn::round_to_dtype(dx * sv[p], mul_type);
  }
  nn::store_doubles(*y, yv.data());
  return Status();
}

// y_scale = (max(0, max x) - min(0, min x)) / 255, zero point = saturate(round(-min / scale)), all in float32.
Status dynamic_quantize_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "x"));
  if (x->dtype() != DType::kFloat32) return nn::bad_dtype(ctx, *x, "x");
  const float* p = x->data<float>();
  float maxx = 0.0f, minx = 0.0f;
  for (int64_t i = 0; i < x->numel(); ++i) {
    maxx = std::max(maxx, p[i]);
    minx = std::min(minx, p[i]);
  }
  const float scale = (maxx == minx ? 1.0f : (maxx - minx)) / 255.0f;
  const float initial_zp = 0.0f - minx / scale;
  const float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::kUInt8, x->dims()));
  uint8_t* yp = y->data<uint8_t>();
  for (int64_t i = 0; i < x->numel(); ++i) {
    float v = std::nearbyint(p[i] / scale) + zp;
    yp[i] = static_cast<uint8_t>(std::isnan(v) ? 0.0f : std::clamp(v, 0.0f, 255.0f));
  }
  if (ctx.wants_output(1)) ctx.set_output(1, Tensor::scalar<float>(scale));
  if (ctx.wants_output(2)) ctx.set_output(2, Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp)));
  return Status();
}

Status quantize_infer(InferContext& ctx) {
  DType out = DType::kUInt8;
  if (ctx.opset() >= 21 && ctx.node().attr_int("output_dtype", 0) != 0) {
    auto t = onnx_quant_type(ctx.node().attr_int("output_dtype", 0), "QuantizeLinear");
    if (!t.ok()) return t.status();
    out = *t;
  } else if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kUndefined) {
    out = ctx.input_dtype(2);
  }
  const auto* s = ctx.input_shape(0);
  ctx.set_output(0, out, s ? *s : std::nullopt);
  return Status();
}

Status dequantize_infer(InferContext& ctx) {
  DType out = ctx.input_dtype(1);
  if (ctx.opset() >= 23) {
    int64_t code = ctx.node().attr_int("output_dtype", 0);
    if (code == 1) out = DType::kFloat32;
    if (code == 10) out = DType::kFloat16;
    if (code == 16) out = DType::kBFloat16;
  }
  const auto* s = ctx.input_shape(0);
  ctx.set_output(0, out, s ? *s : std::nullopt);
  return Status();
}
}  // namespace

void register_quantize_linear(OpRegistry& r) {
  r.add(OpSchema{.op_type = "QuantizeLinear", .since_version = 10, .min_inputs = 2, .max_inputs = 3,
                 .infer = quantize_infer, .kernel = quantize_kernel});
  r.add(OpSchema{.op_type = "DequantizeLinear", .since_version = 10, .min_inputs = 2, .max_inputs = 3,
                 .infer = dequantize_infer, .kernel = dequantize_kernel});
  r.add(OpSchema{.op_type = "DynamicQuantizeLinear",
                 .since_version = 11,
                 .min_inputs = 1,
                 .max_inputs = 1,
                 .infer =
                     [](InferContext& ctx) {
                       const auto* s = ctx.input_shape(0);
                       ctx.set_output(0, DType::kUInt8, s ? *s : std::nullopt);
                       ctx.set_output(1, DType::kFloat32, Shape{});
                       ctx.set_output(2, DType::kUInt8, Shape{});
                       return Status();
                     },
                 .kernel = dynamic_quantize_kernel});
}

}  // namespace ferry::ops
