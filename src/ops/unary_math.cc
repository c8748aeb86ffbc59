// Unary math: Abs Neg Sign Ceil Floor Round Reciprocal Sqrt Exp Log Erf Tanh Sigmoid, the
// trigonometric and hyperbolic functions and their inverses, IsInf and IsNaN.
// Halves compute in float (as numpy's float16 loops do); out-of-domain inputs give NaN like the
// reference (numpy warns but does not fail).
#include <cmath>

#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

template <class F>
KernelFn float_unary(F f) {
  return [f](KernelContext& ctx) { return unary_same(ctx, FloatTypes{}, f); };
}

template <class T>
T abs_value(T x) {
  if constexpr (std::is_unsigned_v<T>)
    return x;
  else if constexpr (is_int_v<T>)
    return x < 0 ? wrap_neg(x) : x;  // |INT_MIN| wraps to INT_MIN, as numpy does
  else
    return std::fabs(x);
}

template <class T>
T neg_value(T x) {
  if constexpr (is_int_v<T>)
    return wrap_neg(x);
  else
    return -x;
}

template <class T>
T sign_value(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return x;
  }
  if (x > T(0)) return T(1);
  if constexpr (!std::is_unsigned_v<T>) {
    if (x < T(0)) return T(-1);
  }
  return T(0);
}

// Split so neither branch overflows exp() for large |x|.
template <class T>
T sigmoid_value(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

Status infer_bool_like_input(InferContext& ctx) {
  const ir::Value* v = ctx.input(0);
  ctx.set_output(0, DType::kBool, v ? v->shape : std::nullopt);
  return Status();
}

void add_bool_unary_schema(OpRegistry& r, const std::string& op, int since, KernelFn kernel) {
  r.add(OpSchema{
      .op_type = op,
      .since_version = since,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = infer_bool_like_input,
      .kernel = std::move(kernel),
  });
}
}  // namespace

void register_unary_math(OpRegistry& r) {
  add_unary_schema(r, "Abs", 1, [](KernelContext& ctx) {
    return unary_same(ctx, NumericTypes{}, [](auto x) { return abs_value(x); });
  });
  add_unary_schema(r, "Neg", 1, [](KernelContext& ctx) {
    return unary_same(ctx, SignedTypes{}, [](auto x) { return neg_value(x); });
  });
  add_unary_schema(r, "Sign", 9, [](KernelContext& ctx) {
    return unary_same(ctx, NumericTypes{}, [](auto x) { return sign_value(x); });
  });

  add_unary_schema(r, "Ceil", 1, float_unary([](auto x) { return std::ceil(x); }));
  add_unary_schema(r, "Floor", 1, float_unary([](auto x) { return std::floor(x); }));
  // Halves go to even (numpy's round); nearbyint uses the default round-to-nearest-even mode.
  add_unary_schema(r, "Round", 11, float_unary([](auto x) { return std::nearbyint(x); }));
  add_unary_schema(r, "Reciprocal", 1, float_unary([](auto x) { return decltype(x)(1) / x; }));
  add_unary_schema(r, "Sqrt", 1, float_unary([](auto x) { return std::sqrt(x); }));
  add_unary_schema(r, "Exp", 1, float_unary([](auto x) { return std::exp(x); }));
  add_unary_schema(r, "Log", 1, float_unary([](auto x) { return std::log(x); }));
  add_unary_schema(r, "Erf", 9, float_unary([](auto x) { return std::erf(x); }));
  add_unary_schema(r, "Tanh", 1, float_unary([](auto x) { return std::tanh(x); }));
  add_unary_schema(r, "Sigmoid", 1, float_unary([](auto x) { return sigmoid_value(x); }));

  add_unary_schema(r, "Sin", 7, float_unary([](auto x) { return std::sin(x); }));
  add_unary_schema(r, "Cos", 7, float_unary([](auto x) { return std::cos(x); }));
  add_unary_schema(r, "Tan", 7, float_unary([](auto x) { return std::tan(x); }));
  add_unary_schema(r, "Asin", 7, float_unary([](auto x) { return std::asin(x); }));
  add_unary_schema(r, "Acos", 7, float_unary([](auto x) { return std::acos(x); }));
  add_unary_schema(r, "Atan", 7, float_unary([](auto x) { return std::atan(x); }));
  add_unary_schema(r, "Sinh", 9, float_unary([](auto x) { return std::sinh(x); }));
  add_unary_schema(r, "Cosh", 9, float_unary([](auto x) { return std::cosh(x); }));
  add_unary_schema(r, "Asinh", 9, float_unary([](auto x) { return std::asinh(x); }));
  add_unary_schema(r, "Acosh", 9, float_unary([](auto x) { return std::acosh(x); }));
  add_unary_schema(r, "Atanh", 9, float_unary([](auto x) { return std::atanh(x); }));

  add_bool_unary_schema(r, "IsNaN", 9, [](KernelContext& ctx) {
    return unary_to_bool(ctx, FloatTypes{}, [](auto x) { return std::isnan(x); });
  });
  add_bool_unary_schema(r, "IsInf", 10, [](KernelContext& ctx) {
    const bool positive = ctx.node().attr_int("detect_positive", 1) != 0;
    const bool negative = ctx.node().attr_int("detect_negative", 1) != 0;
    return unary_to_bool(ctx, FloatTypes{}, [&](auto x) {
      return std::isinf(x) && (x > 0 ? positive : negative);
    });
  });
}

}  // namespace ferry::ops
