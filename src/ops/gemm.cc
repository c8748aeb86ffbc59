// Gemm: Y = alpha * A' * B' + beta * C, with A' = transA ? A^T : A (likewise B), C optional (opset 11+)
// and unidirectionally broadcast to [M, N]. Floats accumulate in double; integers wrap in 64 bits when
// alpha = beta = 1 and otherwise go through double.
#include <algorithm>
#include <cmath>

#include "ops/util/broadcast.h"
#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
Status gemm_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, nn::tensor_in(ctx, 0, "A"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::tensor_in(ctx, 1, "B"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* c, nn::optional_tensor_in(ctx, 2, "C"));
  if (a->dtype() != b->dtype() || (c && c->dtype() != a->dtype()))
    return Status::invalid("Gemm: A, B and C must have the same type");
  if (a->dtype() == DType::kBool) return nn::bad_dtype(ctx, *a, "A");
  if (a->rank() != 2 || b->rank() != 2)
    return Status::invalid("Gemm: A and B must be 2-D, got " + a->describe() + " and " + b->describe());
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const double alpha = ctx.node().attr_float("alpha", 1.0f), beta = ctx.node().attr_float("beta", 1.0f);
  const int64_t M = ta ? a->dim(1) : a->dim(0), K = ta ? a->dim(0) : a->dim(1);
  const int64_t KB = tb ? b->dim(1) : b->dim(0), N = tb ? b->dim(0) : b->dim(1);
  if (K != KB)
    return Status::invalid("Gemm: inner dims differ: A " + a->describe() + (ta ? " (transposed)" : "") + ", B " +
                           b->describe() + (tb ? " (transposed)" : ""));
  std::vector<int64_t> out_dims = {M, N};
  if (c) {
    auto bd = broadcast_dims(c->dims(), out_dims);
    if (c->rank() > 2 || !bd.ok() || *bd != out_dims)
      return Status::invalid("Gemm: C " + c->describe() + " does not broadcast to [" + std::to_string(M) + "," +
                             std::to_string(N) + "]");
  }
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, a->dtype(), out_dims));
  auto a_at = [&](int64_t i, int64_t k) { return ta ? k * M + i : i * K + k; };
  auto b_at = [&](int64_t k, int64_t j) { return tb ? j * K + k : k * N + j; };
  std::vector<int64_t> c_strides = c ? broadcast_strides(c->dims(), out_dims) : std::vector<int64_t>{0, 0};
  const bool int_wrap = !is_floating(a->dtype()) && alpha == 1.0 && beta == 1.0;
  if (!int_wrap) {
    const std::vector<double> a_raw = nn::to_doubles(*a), b_raw = nn::to_doubles(*b);
    // Row-major copies of A' [M, K] and B' [K, N], so the product loop below reads both contiguously.
    std::vector<double> av(M * K), bv(K * N), yv(M * N, 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) av[i * K + k] = a_raw[a_at(i, k)];
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) bv[k * N + j] = b_raw[b_at(k, j)];
    std::vector<double> cv = c ? nn::to_doubles(*c) : std::vector<double>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const double x = av[i * K + k];
        const double* brow = bv.data() + k * N;
        double* yrow = yv.data() + i * N;
        for (int64_t j = 0; j < N; ++j) yrow[j] += x * brow[j];
      }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double v = alpha * yv[i * N + j];
        if (c) v += beta * cv[i * c_strides[0] + j * c_strides[1]];
        yv[i * N + j] = v;
      }
    if (is_floating(a->dtype())) {
      nn::store_doubles(*y, yv.data());
    } else {
      std::vector<int64_t> yi(yv.size());
      for (size_t i = 0; i < yv.size(); ++i)
        yi[i] = std::isnan(yv[i]) ? 0 : static_cast<int64_t>(std::clamp(yv[i], -9.2e18, 9.2e18));
      nn::store_int64s(*y, yi.data());
    }
    return Status();
  }
  std::vector<int64_t> ai = nn::to_int64s(*a), bi = nn::to_int64s(*b);
  std::vector<int64_t> ci = c ? nn::to_int64s(*c) : std::vector<int64_t>();
  std::vector<uint64_t> yu(M * N, 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const uint64_t x = static_cast<uint64_t>(ai[a_at(i, k)]);
      for (int64_t j = 0; j < N; ++j) yu[i * N + j] += x * static_cast<uint64_t>(bi[b_at(k, j)]);
    }
  std::vector<int64_t> yi(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      uint64_t v = yu[i * N + j];
      if (c) v += static_cast<uint64_t>(ci[i * c_strides[0] + j * c_strides[1]]);
      yi[i * N + j] = static_cast<int64_t>(v);
    }
  nn::store_int64s(*y, yi.data());
  return Status();
}

Status gemm_infer(InferContext& ctx) {
  const auto* as = ctx.input_shape(0);
  const auto* bs = ctx.input_shape(1);
  std::optional<Shape> out;
  if (as && bs && *as && *bs && (*as)->size() == 2 && (*bs)->size() == 2) {
    const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
    out = Shape{(**as)[ta ? 1 : 0], (**bs)[tb ? 0 : 1]};
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}
}  // namespace

void register_gemm(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Gemm",
      .since_version = 7,
      .min_inputs = 2,
      .max_inputs = 3,
      .infer = gemm_infer,
      .kernel = gemm_kernel,
  });
}

}  // namespace ferry::ops
