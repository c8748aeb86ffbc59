// LinearAttention (opset 27): recurrent linear attention over packed [B, T, H*D] inputs with a
// [B, H_kv, d_k, d_v] state, for the update rules linear, gated, delta and gated_delta, with grouped
// query heads (query head h reads the state of KV head h / (H_q / H_kv)). The recurrence runs token by
// token in double (the reference runs it in float32) and the results are cast to the output dtypes.
#include <cmath>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

struct LinearAttentionConfig {
  int64_t q_heads = 0, kv_heads = 0;
  bool gating = false, delta = false;
  float scale = 0;
};

Result<LinearAttentionConfig> read_config(const ir::Node& node) {
  LinearAttentionConfig c;
  if (!node.has_attr("q_num_heads") || !node.has_attr("kv_num_heads"))
    return Status::invalid("q_num_heads and kv_num_heads are required attributes");
  c.q_heads = node.attr_int("q_num_heads", 0);
  c.kv_heads = node.attr_int("kv_num_heads", 0);
  if (c.q_heads <= 0 || c.kv_heads <= 0 || c.q_heads % c.kv_heads != 0)
    return Status::invalid("q_num_heads (" + std::to_string(c.q_heads) + ") must be a positive multiple of kv_num_heads (" +
                           std::to_string(c.kv_heads) + ")");
  const std::string rule = node.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return Status::invalid("update_rule must be 'linear', 'gated', 'delta' or 'gated_delta'; got '" + rule + "'");
  c.gating = rule == "gated" || rule == "gated_delta";
  c.delta = rule == "delta" || rule == "gated_delta";
  c.scale = node.attr_float("scale", 0.0f);
  return c;
}

Status linear_attention_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(LinearAttentionConfig cfg, read_config(ctx.node()));
  for (int i = 0; i < 6; ++i)
    if (ctx.has_input(i) && !ctx.input_value(i)->is_tensor())
      return Status::invalid("input " + std::to_string(i) + " must be a tensor");
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    return Status::invalid("query, key and value are required");
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const Tensor* past = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* decay = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  const Tensor* beta = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  const std::string rule = ctx.node().attr_string("update_rule", "gated_delta");
  if (cfg.gating != (decay != nullptr))
    return Status::invalid("update_rule '" + rule + (cfg.gating ? "' requires" : "' forbids") + " the decay input");
  if (cfg.delta != (beta != nullptr))
    return Status::invalid("update_rule '" + rule + (cfg.delta ? "' requires" : "' forbids") + " the beta input");

  const DType dt = q.dtype();
  if (!is_floating(dt)) return Status::unsupported("LinearAttention does not take " + std::string(dtype_name(dt)));
  const std::pair<const char*, const Tensor*> packed[] = {{"query", &q}, {"key", &k}, {"value", &v}, {"decay", decay}, {"beta", beta}};
  for (const auto& [name, t] : packed) {
    if (!t) continue;
    if (t->rank() != 3) return Status::invalid(std::string(name) + " must be rank 3 (B, T, H*D); got " + t->describe());
    if (t->dtype() != dt) return Status::invalid(std::string(name) + " dtype must match query: " + t->describe());
    if (t->dim(0) != q.dim(0) || t->dim(1) != q.dim(1))
      return Status::invalid(std::string(name) + " " + t->describe() + " must share batch and length with query " +
                             q.describe());
  }
  const int64_t B = q.dim(0), T = q.dim(1), Hq = cfg.q_heads, Hkv = cfg.kv_heads;
  if (q.dim(2) % Hq != 0)
    return Status::invalid("query last dim " + std::to_string(q.dim(2)) + " is not divisible by q_num_heads " + std::to_string(Hq));
  const int64_t dk = q.dim(2) / Hq;
  if (k.dim(2) != Hkv * dk)
    return Status::invalid("key last dim " + std::to_string(k.dim(2)) + " must be kv_num_heads * d_k = " + std::to_string(Hkv * dk));
  if (v.dim(2) % Hkv != 0)
    return Status::invalid("value last dim " + std::to_string(v.dim(2)) + " is not divisible by kv_num_heads " + std::to_string(Hkv));
  const int64_t dv = v.dim(2) / Hkv;
  // A per-head decay (one value per KV head) broadcasts over d_k; otherwise one per key dim.
  bool decay_per_head = false;
  if (decay) {
    if (decay->dim(2) == Hkv) decay_per_head = true;
    else if (decay->dim(2) != Hkv * dk)
      return Status::invalid("decay last dim " + std::to_string(decay->dim(2)) + " must be kv_num_heads (" +
                             std::to_string(Hkv) + ") or kv_num_heads*d_k (" + std::to_string(Hkv * dk) + ")");
  }
  if (beta && beta->dim(2) != Hkv && beta->dim(2) != 1)
    return Status::invalid("beta last dim " + std::to_string(beta->dim(2)) + " must be kv_num_heads (" + std::to_string(Hkv) + ") or 1");
  const std::vector<int64_t> state_dims{B, Hkv, dk, dv};
  if (past && past->dims() != state_dims)
    return Status::invalid("past_state " + past->describe() + " must have shape " + dims_to_string(state_dims));
  if (past && !is_floating(past->dtype()))
    return Status::unsupported("past_state must be floating; got " + past->describe());
  const DType state_dtype = past ? past->dtype() : dt;

  FERRY_ASSIGN_OR_RETURN(int64_t state_numel, checked_numel(state_dims));
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(DType::kFloat64, {B, T, Hq * dv}));
  FERRY_ASSIGN_OR_RETURN(Tensor state_t, Tensor::create(DType::kFloat64, state_dims));
  double* state = state_t.data<double>();
  if (past)
    for (int64_t i = 0; i < state_numel; ++i) state[i] = past->as_double(i);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(), vv = v.to_double_vector();
  const std::vector<double> gv = decay ? decay->to_double_vector() : std::vector<double>();
  const std::vector<double> bv = beta ? beta->to_double_vector() : std::vector<double>();
  const double scale = cfg.scale == 0.0f ? 1.0 / std::sqrt(static_cast<double>(dk)) : static_cast<double>(cfg.scale);
  const int64_t group = Hq / Hkv;
  double* po = out.data<double>();
  std::vector<double> v_t(static_cast<size_t>(dv));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hkv; ++h) {
      double* S = state + (b * Hkv + h) * dk * dv;  // [dk, dv]
      for (int64_t t = 0; t < T; ++t) {
        const int64_t bt = b * T + t;
        const double* k_t = kv.data() + bt * Hkv * dk + h * dk;
        for (int64_t m = 0; m < dv; ++m) v_t[m] = vv[bt * Hkv * dv + h * dv + m];
        if (cfg.gating) {
          for (int64_t d = 0; d < dk; ++d) {
            const double g = decay_per_head ? gv[bt * Hkv + h] : gv[bt * Hkv * dk + h * dk + d];
            const double f = std::exp(g);
            for (int64_t m = 0; m < dv; ++m) S[d * dv + m] *= f;
          }
        }
        if (cfg.delta) {
          const int64_t beta_last = beta->dim(2);
          const double bt_val = bv[bt * beta_last + (beta_last == 1 ? 0 : h)];
          for (int64_t m = 0; m < dv; ++m) {
            double retrieved = 0;
            for (int64_t d = 0; d < dk; ++d) retrieved += S[d * dv + m] * k_t[d];
            v_t[m] = bt_val * (v_t[m] - retrieved);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) S[d * dv + m] += k_t[d] * v_t[m];
        for (int64_t hq = h * group; hq < (h + 1) * group; ++hq) {
          const double* q_t = qv.data() + bt * Hq * dk + hq * dk;
          for (int64_t m = 0; m < dv; ++m) {
            double acc = 0;
            for (int64_t d = 0; d < dk; ++d) acc += q_t[d] * S[d * dv + m];
            po[bt * Hq * dv + hq * dv + m] = scale * acc;
          }
        }
      }
    }
  }
  ctx.set_output(0, out.cast(dt));
  if (ctx.wants_output(1)) ctx.set_output(1, state_t.cast(state_dtype));
  return Status();
}

// Static last dim of a rank-3 shape divided by `heads`, or unknown.
Dim per_head_dim(const std::optional<Shape>* s, int64_t heads) {
  if (!s || !*s || (*s)->size() != 3 || !(**s)[2].is_static() || heads <= 0 || (**s)[2].value % heads != 0) return Dim();
  return Dim((**s)[2].value / heads);
}

Status linear_attention_infer(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  const int64_t hq = node.attr_int("q_num_heads", 0), hkv = node.attr_int("kv_num_heads", 0);
  const DType dt = ctx.input_dtype(0);
  const DType state_dt = ctx.has_input(3) ? ctx.input_dtype(3) : dt;
  const std::optional<Shape>* qs = ctx.input_shape(0);
  const Dim dk = per_head_dim(qs, hq), dv = per_head_dim(ctx.input_shape(2), hkv);
  std::optional<Shape> out_shape, state_shape;
  if (qs && *qs && (*qs)->size() == 3) {
    Dim last = dv.is_static() ? Dim(dv.value * hq) : Dim();
    out_shape = Shape{(**qs)[0], (**qs)[1], last};
    state_shape = Shape{(**qs)[0], hkv > 0 ? Dim(hkv) : Dim(), dk, dv};
  }
  ctx.set_output(0, dt, out_shape);
  ctx.set_output(1, state_dt, state_shape);
  return Status();
}

}  // namespace

void register_linear_attention(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "LinearAttention",
      .since_version = 27,
      .min_inputs = 3,
      .max_inputs = 6,
      .infer = linear_attention_infer,
      .kernel = linear_attention_kernel,
  });
}

}  // namespace ferry::ops
