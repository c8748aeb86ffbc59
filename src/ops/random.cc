// Random generators: RandomUniform, RandomNormal (shape attribute), RandomUniformLike,
// RandomNormalLike (shape of the input), Bernoulli (opset 15), Multinomial (opset 7).
// With a `seed` attribute results are reproducible run to run (std::mt19937_64), but ONNX leaves the
// generator unspecified, so they cannot equal another runtime's (NumPy's) draws.
#include <cmath>
#include <random>

#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

std::mt19937_64 make_engine(const ir::Node& node) {
  if (node.has_attr("seed")) {
    const float seed = node.attr_float("seed", 0.0f);
    if (!std::isnan(seed)) return std::mt19937_64(static_cast<uint64_t>(static_cast<int64_t>(seed)));
  }
  std::random_device rd;
  return std::mt19937_64((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

enum class Dist { kUniform, kNormal };

Result<Tensor> sample(const ir::Node& node, Dist dist, DType dt, const std::vector<int64_t>& dims) {
  if (!is_floating(dt)) return Status::invalid(node.op_type + " dtype must be floating, got " + std::string(dtype_name(dt)));
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(DType::kFloat64, dims));
  std::mt19937_64 eng = make_engine(node);
  double* p = out.data<double>();
  if (dist == Dist::kUniform) {
    const double lo = node.attr_float("low", 0.0f), hi = node.attr_float("high", 1.0f);
    if (!(hi >= lo)) return Status::invalid(node.op_type + " needs high >= low");
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = u(eng);
  } else {
    const double mean = node.attr_float("mean", 0.0f), scale = node.attr_float("scale", 1.0f);
    if (!(scale >= 0)) return Status::invalid(node.op_type + " needs scale >= 0");
    std::normal_distribution<double> nd(mean, scale);
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = nd(eng);
  }
  return out.cast(dt);
}

Result<DType> attr_dtype(const ir::Node& node, DType dflt) {
  if (!node.has_attr("dtype")) return dflt;
  return dtype_from_onnx(node.attr_int("dtype", 1));
}

Status random_kernel(KernelContext& ctx, Dist dist) {
  const ir::Node& node = ctx.node();
  if (!node.has_attr("shape")) return Status::invalid(node.op_type + " requires the 'shape' attribute");
  FERRY_ASSIGN_OR_RETURN(DType dt, attr_dtype(node, DType::kFloat32));
  FERRY_ASSIGN_OR_RETURN(Tensor t, sample(node, dist, dt, node.attr_ints("shape")));
  ctx.set_output(0, std::move(t));
  return Status();
}

Status random_like_kernel(KernelContext& ctx, Dist dist) {
  FERRY_ASSIGN_OR_RETURN(DType dt, attr_dtype(ctx.node(), ctx.input(0).dtype()));
  FERRY_ASSIGN_OR_RETURN(Tensor t, sample(ctx.node(), dist, dt, ctx.input(0).dims()));
  ctx.set_output(0, std::move(t));
  return Status();
}

Status bernoulli_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_floating(x.dtype())) return Status::invalid("Bernoulli input must be floating");
  FERRY_ASSIGN_OR_RETURN(DType dt, attr_dtype(ctx.node(), x.dtype()));
  std::mt19937_64 eng = make_engine(ctx.node());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(DType::kFloat64, x.dims()));
  std::vector<double> p = x.to_double_vector();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (!(p[i] >= 0 && p[i] <= 1))
      return Status::invalid("Bernoulli probability " + std::to_string(p[i]) + " at index " + std::to_string(i) +
                             " is outside [0, 1]");
    out.data<double>()[i] = u(eng) < p[i] ? 1.0 : 0.0;
  }
  ctx.set_output(0, out.cast(dt));
  return Status();
}

Status multinomial_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_floating(x.dtype()) || x.rank() != 2)
    return Status::invalid("Multinomial input must be a floating [batch, classes] tensor");
  FERRY_ASSIGN_OR_RETURN(DType dt, dtype_from_onnx(ctx.node().attr_int("dtype", 6)));
  if (dt != DType::kInt32 && dt != DType::kInt64) return Status::invalid("Multinomial dtype must be int32 or int64");
  const int64_t samples = ctx.node().attr_int("sample_size", 1);
  if (samples < 0) return Status::invalid("Multinomial sample_size must be non-negative");
  const int64_t batch = x.dim(0), classes = x.dim(1);
  if (classes <= 0) return Status::invalid("Multinomial needs at least one class");
  std::vector<double> logits = x.to_double_vector();
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(DType::kInt64, {batch, samples}));
  std::mt19937_64 eng = make_engine(ctx.node());
  for (int64_t b = 0; b < batch; ++b) {
    // The input holds unnormalised log-probabilities.
    std::vector<double> w(classes);
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, logits[b * classes + c]);
    if (std::isnan(mx) || (std::isinf(mx) && mx > 0))
      return Status::invalid("Multinomial row " + std::to_string(b) + " has NaN or +inf log-probabilities");
    for (int64_t c = 0; c < classes; ++c) {
      w[c] = std::isinf(mx) ? 1.0 : std::exp(logits[b * classes + c] - mx);
      if (std::isnan(w[c])) return Status::invalid("Multinomial row " + std::to_string(b) + " has NaN log-probabilities");
    }
    std::discrete_distribution<int64_t> d(w.begin(), w.end());
    for (int64_t s = 0; s < samples; ++s) out.data<int64_t>()[b * samples + s] = d(eng);
  }
  ctx.set_output(0, out.cast(dt));
  return Status();
}

Status random_infer(InferContext& ctx) {
  auto dt = attr_dtype(ctx.node(), DType::kFloat32);
  std::optional<Shape> shape;
  if (ctx.node().has_attr("shape")) shape = to_shape(ctx.node().attr_ints("shape"));
  ctx.set_output(0, dt.ok() ? *dt : DType::kUndefined, shape);
  return Status();
}

Status like_infer(InferContext& ctx) {
  auto dt = attr_dtype(ctx.node(), ctx.input_dtype(0));
  const auto* s = ctx.input_shape(0);
  ctx.set_output(0, dt.ok() ? *dt : DType::kUndefined, s ? *s : std::nullopt);
  return Status();
}

Status multinomial_infer(InferContext& ctx) {
  auto dt = dtype_from_onnx(ctx.node().attr_int("dtype", 6));
  std::optional<Shape> shape;
  if (ctx.input_rank(0) == 2) shape = Shape{(**ctx.input_shape(0))[0], Dim(ctx.node().attr_int("sample_size", 1))};
  ctx.set_output(0, dt.ok() ? *dt : DType::kUndefined, shape);
  return Status();
}

}  // namespace

void register_random(OpRegistry& r) {
  r.add(OpSchema{.op_type = "RandomUniform", .since_version = 1, .min_inputs = 0, .max_inputs = 0, .infer = random_infer,
                 .kernel = [](KernelContext& ctx) { return random_kernel(ctx, Dist::kUniform); }});
  r.add(OpSchema{.op_type = "RandomNormal", .since_version = 1, .min_inputs = 0, .max_inputs = 0, .infer = random_infer,
                 .kernel = [](KernelContext& ctx) { return random_kernel(ctx, Dist::kNormal); }});
  r.add(OpSchema{.op_type = "RandomUniformLike", .since_version = 1, .min_inputs = 1, .max_inputs = 1, .infer = like_infer,
                 .kernel = [](KernelContext& ctx) { return random_like_kernel(ctx, Dist::kUniform); }});
  r.add(OpSchema{.op_type = "RandomNormalLike", .since_version = 1, .min_inputs = 1, .max_inputs = 1, .infer = like_infer,
                 .kernel = [](KernelContext& ctx) { return random_like_kernel(ctx, Dist::kNormal); }});
  r.add(OpSchema{.op_type = "Bernoulli", .since_version = 15, .min_inputs = 1, .max_inputs = 1, .infer = like_infer,
                 .kernel = bernoulli_kernel});
  r.add(OpSchema{.op_type = "Multinomial", .since_version = 7, .min_inputs = 1, .max_inputs = 1,
                 .infer = multinomial_infer, .kernel = multinomial_kernel});
}

}  // namespace ferry::ops
