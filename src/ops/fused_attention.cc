// com.ferry FusedAttention (produced by passes/recognize_attention): scaled dot-product attention as
// torch exports it. Inputs Q [..., S, D], K [..., T, D], V [..., T, Dv], Mask? (additive, broadcastable
// to [..., S, T]); attributes scale (float, default 1/sqrt(D)) and nan_to_zero (int, default 0: 1 makes
// NaN probabilities 0, as torch 2's SDPA export does with Where(IsNaN(P), 0, P) so that a fully masked row
// gives 0, not NaN). Y = softmax(scale * Q K^T + Mask, -1) V, with the batch dims (...) equal in Q, K and
// V. Accumulates in double.
#include <cmath>
#include <limits>

#include "ops/util/broadcast.h"
#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
Status fused_attention_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* q, nn::tensor_in(ctx, 0, "Q"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* k, nn::tensor_in(ctx, 1, "K"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* v, nn::tensor_in(ctx, 2, "V"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* mask, nn::optional_tensor_in(ctx, 3, "Mask"));
  if (!is_floating(q->dtype())) return nn::bad_dtype(ctx, *q, "Q");
  if (k->dtype() != q->dtype() || v->dtype() != q->dtype() || (mask && mask->dtype() != q->dtype()))
    return Status::invalid("FusedAttention: Q, K, V and Mask must have the same type");
  const int r = q->rank();
  if (r < 2 || k->rank() != r || v->rank() != r)
    return Status::invalid("FusedAttention: Q, K and V must have the same rank >= 2, got " + q->describe() + ", " +
                           k->describe() + ", " + v->describe());
  std::vector<int64_t> batch(q->dims().begin(), q->dims().end() - 2);
  if (std::vector<int64_t>(k->dims().begin(), k->dims().end() - 2) != batch ||
      std::vector<int64_t>(v->dims().begin(), v->dims().end() - 2) != batch)
    return Status::invalid("FusedAttention: batch dims of Q, K and V differ: " + q->describe() + ", " + k->describe() +
                           ", " + v->describe());
  const int64_t S = q->dim(-2), D = q->dim(-1), T = k->dim(-2), Dv = v->dim(-1);
  if (k->dim(-1) != D || v->dim(-2) != T)
    return Status::invalid("FusedAttention: K must be [..., T, " + std::to_string(D) + "] and V [..., T, Dv], got " +
                           k->describe() + ", " + v->describe());
  std::vector<int64_t> score_dims = batch;
  score_dims.push_back(S);
  score_dims.push_back(T);
  if (mask) {
    auto bc = broadcast_dims(mask->dims(), score_dims);
    if (!bc.ok() || *bc != score_dims)
      return Status::invalid("FusedAttention: Mask " + mask->describe() + " does not broadcast to the scores " +
                             dims_to_string(score_dims));
  }
  const double scale = ctx.node().has_attr("scale") ? ctx.node().attr_float("scale", 1.0f) : 1.0 / std::sqrt(double(D));
  const bool nan_to_zero = ctx.node().attr_int("nan_to_zero", 0) != 0;
  std::vector<int64_t> out_dims = batch;
  out_dims.push_back(S);
  out_dims.push_back(Dv);
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, q->dtype(), out_dims));
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  std::vector<double> qv = nn::to_doubles(*q), kv = nn::to_doubles(*k), vv = nn::to_doubles(*v);
  std::vector<double> scores(nb * S * T);
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < T; ++j) {
        double acc = 0;
        const double* qr = qv.data() + (bi * S + i) * D;
        const double* kr = kv.data() + (bi * T + j) * D;
        for (int64_t d = 0; d < D; ++d) acc += qr[d] * kr[d];
        scores[(bi * S + i) * T + j] = scale * acc;
      }
  if (mask) {
    std::vector<double> mv = nn::to_doubles(*mask);
    for_each_broadcast(score_dims, score_dims, mask->dims(), [&](int64_t o, int64_t, int64_t im) { scores[o] += mv[im]; });
  }
  std::vector<double> yv(y->numel(), 0.0);
  for (int64_t row = 0; row < nb * S; ++row) {
    double* s = scores.data() + row * T;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < T; ++j) mx = std::max(mx, s[j]);
    double sum = 0;
    for (int64_t j = 0; j < T; ++j) sum += (s[j] = std::exp(s[j] - mx));
    const int64_t bi = row / std::max<int64_t>(S, 1);
    double* yr = yv.data() + row * Dv;
    for (int64_t j = 0; j < T; ++j) {
      const double p = s[j] / sum;  // a fully masked row (-inf everywhere) gives NaN, like Softmax
      if (nan_to_zero && std::isnan(p)) continue;
      const double* vr = vv.data() + (bi * T + j) * Dv;
      for (int64_t d = 0; d < Dv; ++d) yr[d] += p * vr[d];
    }
  }
  nn::store_doubles(*y, yv.data());
  return Status();
}

Status fused_attention_infer(InferContext& ctx) {
  const auto* qs = ctx.input_shape(0);
  const auto* vs = ctx.input_shape(2);
  std::optional<Shape> out;
  if (qs && *qs && vs && *vs && (*qs)->size() >= 2 && (*vs)->size() == (*qs)->size()) {
    out = **qs;
    out->back() = (*vs)->back();
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}
}  // namespace

void register_fused_attention(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "FusedAttention",
      .domain = "com.ferry",
      .since_version = 1,
      .min_inputs = 3,
      .max_inputs = 4,
      .infer = fused_attention_infer,
      .kernel = fused_attention_kernel,
  });
}

}  // namespace ferry::ops
