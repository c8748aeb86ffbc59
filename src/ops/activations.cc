// Activations: Relu LeakyRelu Elu Selu Celu Gelu HardSigmoid HardSwish Mish Softplus Softsign
// ThresholdedRelu Shrink Swish, and PRelu (x against a broadcast slope).
// Attributes are floats; the arithmetic runs in the input's compute type (float for halves, double for
// double), as the numpy reference does.
#include <cmath>

#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

template <class F>
KernelFn float_unary(F f) {
  return [f](KernelContext& ctx) { return unary_same(ctx, FloatTypes{}, f); };
}

// log(1 + exp(x)) without overflow for large x.
template <class C>
C softplus_value(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <class C>
C sigmoid_value(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

Status gelu_kernel(KernelContext& ctx) {
  const std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx == "none")
    return unary_same(ctx, FloatTypes{}, [](auto x) {
      using C = decltype(x);
      return C(0.5) * x * (C(1) + std::erf(x / std::sqrt(C(2))));
    });
  if (approx == "tanh")
    return unary_same(ctx, FloatTypes{}, [](auto x) {
      using C = decltype(x);
      const C k = std::sqrt(C(2) / C(M_PI));
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  return Status::invalid("Gelu: attribute approximate must be 'none' or 'tanh', got '" + approx + "'");
}

Status shrink_kernel(KernelContext& ctx) {
  const double bias = ctx.node().attr_float("bias", 0.0f);
  const double lambd = ctx.node().attr_float("lambd", 0.5f);
  return unary_same(ctx, NumericTypes{}, [&](auto x) {
    using C = decltype(x);
    if constexpr (is_int_v<C>) {
      // Integers compare against the float thresholds and shift by the (truncated) bias.
      const double v = static_cast<double>(x);
      if (v < -lambd) return float_to_int<C>(v + bias);
      if (v > lambd) return float_to_int<C>(v - bias);
      return C(0);
    } else {
      if (x < C(-lambd)) return C(x + C(bias));
      if (x > C(lambd)) return C(x - C(bias));
      return C(0);
    }
  });
}

// Numpy broadcasting first; failing that, the reference's fallback: a 1-D slope whose length matches
// exactly one axis of x is applied along that axis.
Result<std::vector<int64_t>> prelu_slope_dims(const Tensor& x, const Tensor& slope) {
  auto b = broadcast_dims(x.dims(), slope.dims());
  if (b.ok() && *b == x.dims()) return slope.dims();
  if (slope.rank() == 1) {
    int matches = 0;
    std::vector<int64_t> dims(x.rank(), 1);
    for (int i = 0; i < x.rank(); ++i) {
      if (x.dim(i) == slope.dim(0)) {
        dims[i] = slope.dim(0);
        ++matches;
      }
    }
    if (matches == 1) return dims;
  }
  return Status::invalid("PRelu: slope " + slope.describe() + " does not broadcast to x " + x.describe());
}

Status prelu_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(const Tensor* slope_in, tensor_input(ctx, 1));
  FERRY_RETURN_IF_ERROR(check_same_dtype(ctx, *x, *slope_in));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> slope_dims, prelu_slope_dims(*x, *slope_in));
  FERRY_ASSIGN_OR_RETURN(Tensor slope, slope_in->reshaped(slope_dims));
  bool ok = false;
  Result<Tensor> out = broadcast_same(*x, slope, NumericTypes{}, [](auto v, auto s) {
    using C = decltype(v);
    if constexpr (is_int_v<C>)
      return v < C(0) ? wrap_mul(v, s) : v;
    else
      return v < C(0) ? C(v * s) : v;
  }, &ok);
  if (!ok) return unsupported_dtype(ctx, x->dtype());
  if (!out.ok()) return out.status();
  ctx.set_output(0, std::move(out).value());
  return Status();
}
}  // namespace

void register_activations(OpRegistry& r) {
  add_unary_schema(r, "Relu", 1, [](KernelContext& ctx) {
    return unary_same(ctx, SignedTypes{}, [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
  });
  add_unary_schema(r, "LeakyRelu", 1, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 0.01f);
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      return x > C(0) ? x : C(alpha) * x;
    });
  });
  add_unary_schema(r, "Elu", 1, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 1.0f);
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      return x > C(0) ? x : C(alpha) * std::expm1(x);
    });
  });
  add_unary_schema(r, "Selu", 1, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 1.67326319217681884765625f);
    const float gamma = ctx.node().attr_float("gamma", 1.05070102214813232421875f);
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      return C(gamma) * (x > C(0) ? x : C(alpha) * std::expm1(x));
    });
  });
  add_unary_schema(r, "Celu", 12, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 1.0f);
    if (alpha == 0.0f) return Status::invalid("Celu: alpha must not be 0");
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      const C a = C(alpha);
      return std::max(C(0), x) + std::min(C(0), a * std::expm1(x / a));
    });
  });
  add_unary_schema(r, "Gelu", 20, gelu_kernel);
  add_unary_schema(r, "HardSigmoid", 1, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 0.2f);
    const float beta = ctx.node().attr_float("beta", 0.5f);
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      return std::max(C(0), std::min(C(1), x * C(alpha) + C(beta)));
    });
  });
  add_unary_schema(r, "HardSwish", 14, float_unary([](auto x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  }));
  add_unary_schema(r, "Mish", 18, float_unary([](auto x) { return x * std::tanh(softplus_value(x)); }));
  add_unary_schema(r, "Softplus", 1, float_unary([](auto x) { return softplus_value(x); }));
  add_unary_schema(r, "Softsign", 1, float_unary([](auto x) { return x / (decltype(x)(1) + std::fabs(x)); }));
  add_unary_schema(r, "ThresholdedRelu", 10, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 1.0f);
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      return x > C(alpha) ? x : C(0);
    });
  });
  add_unary_schema(r, "Shrink", 9, shrink_kernel);
  add_unary_schema(r, "Swish", 24, [](KernelContext& ctx) {
    const float alpha = ctx.node().attr_float("alpha", 1.0f);
    return unary_same(ctx, FloatTypes{}, [&](auto x) {
      using C = decltype(x);
      return x * sigmoid_value(C(alpha) * x);
    });
  });

  r.add(OpSchema{
      .op_type = "PRelu",
      .since_version = 7,
      .min_inputs = 2,
      .max_inputs = 2,
      .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },  // output has x's shape
      .kernel = prelu_kernel,
  });
}

}  // namespace ferry::ops
