// Attention (opset 23; 24 adds nonpad_kv_seqlen; 25 adds left/right_window_size): scaled dot-product
// attention with 3-D (heads packed in the hidden axis) or 4-D inputs, grouped-query heads, boolean or
// additive masks, causal and sliding-window masks, KV cache (past/present), softcap, softmax precision
// and the optional qk_matmul_output. Follows the ONNX reference step by step, rounding intermediates to
// the input dtype where NumPy computes in it, so half-precision results agree.
#include <cmath>
#include <limits>

#include "ops/op.h"
#include "ops/util/control_numeric.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct AttnDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past_len = 0, head = 0, v_head = 0;
  bool packed = false;  // 3-D inputs
};

// Reads a Q/K/V-style input into [B, H, S, D] order (doubles).
std::vector<double> to_bhsd(const Tensor& t, bool packed, int64_t heads, int64_t& seq, int64_t& head) {
  std::vector<double> src = t.to_double_vector();
  if (!packed) {
    seq = t.dim(2);
    head = t.dim(3);
    return src;
  }
  const int64_t b = t.dim(0);
  seq = t.dim(1);
  head = t.dim(2) / heads;
  std::vector<double> out(src.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < head; ++d)
          out[((bi * heads + h) * seq + s) * head + d] = src[(bi * seq + s) * heads * head + h * head + d];
  return out;
}

// Concatenates past [B,H,P,D] and current [B,H,S,D] along the sequence axis.
std::vector<double> with_past(const std::vector<double>& past, int64_t p, const std::vector<double>& cur, int64_t s,
                              int64_t bh, int64_t d) {
  std::vector<double> out(bh * (p + s) * d);
  for (int64_t x = 0; x < bh; ++x) {
    std::copy(past.begin() + x * p * d, past.begin() + (x + 1) * p * d, out.begin() + x * (p + s) * d);
    std::copy(cur.begin() + x * s * d, cur.begin() + (x + 1) * s * d, out.begin() + x * (p + s) * d + p * d);
  }
  return out;
}

Status attention_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  for (int i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) return Status::invalid("Attention needs Q, K and V");
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  const DType T = q.dtype();
  if (!is_floating(T)) return Status::invalid("Attention needs floating Q, got " + std::string(dtype_name(T)));
  if (k.dtype() != T || v.dtype() != T) return Status::invalid("Attention Q, K and V must share one dtype");
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4))
    return Status::invalid("Attention Q, K and V must all be 3-D or all 4-D");
  AttnDims dm;
  dm.packed = q.rank() == 3;
  dm.batch = q.dim(0);
  if (k.dim(0) != dm.batch || v.dim(0) != dm.batch) return Status::invalid("Attention inputs disagree on batch size");
  if (dm.packed) {
    dm.q_heads = node.attr_int("q_num_heads", 0);
    dm.kv_heads = node.attr_int("kv_num_heads", 0);
    if (dm.q_heads <= 0 || dm.kv_heads <= 0)
      return Status::invalid("3-D Attention inputs need positive q_num_heads and kv_num_heads");
    if (q.dim(2) % dm.q_heads || k.dim(2) % dm.kv_heads || v.dim(2) % dm.kv_heads)
      return Status::invalid("Attention hidden sizes must be divisible by the head counts");
  } else {
    dm.q_heads = q.dim(1);
    dm.kv_heads = k.dim(1);
    if (v.dim(1) != dm.kv_heads) return Status::invalid("Attention K and V must have the same number of heads");
  }
  if (dm.kv_heads <= 0 || dm.q_heads % dm.kv_heads != 0)
    return Status::invalid("Attention q heads (" + std::to_string(dm.q_heads) + ") must be a multiple of kv heads (" +
                           std::to_string(dm.kv_heads) + ")");
  int64_t kv_cur = 0, k_head = 0, v_cur = 0;
  std::vector<double> qd = to_bhsd(q, dm.packed, dm.q_heads, dm.q_len, dm.head);
  std::vector<double> kd = to_bhsd(k, dm.packed, dm.kv_heads, kv_cur, k_head);
  std::vector<double> vd = to_bhsd(v, dm.packed, dm.kv_heads, v_cur, dm.v_head);
  if (k_head != dm.head) return Status::invalid("Attention Q and K head sizes differ");
  if (v_cur != kv_cur) return Status::invalid("Attention K and V sequence lengths differ");

  const bool has_past = ctx.has_input(4) || ctx.has_input(5);
  if (has_past && !(ctx.has_input(4) && ctx.has_input(5)))
    return Status::invalid("Attention past_key and past_value must be given together");
  const bool has_nonpad = ctx.has_input(6);
  if (has_past && has_nonpad) return Status::invalid("Attention nonpad_kv_seqlen cannot be combined with past_key");
  const int64_t bh_kv = dm.batch * dm.kv_heads;
  if (has_past) {
    const Tensor& pk = ctx.input(4);
    const Tensor& pv = ctx.input(5);
    if (pk.rank() != 4 || pv.rank() != 4 || pk.dim(0) != dm.batch || pk.dim(1) != dm.kv_heads || pk.dim(3) != dm.head ||
        pv.dim(0) != dm.batch || pv.dim(1) != dm.kv_heads || pv.dim(2) != pk.dim(2) || pv.dim(3) != dm.v_head)
      return Status::invalid("Attention past_key/past_value shapes " + pk.describe() + " / " + pv.describe() +
                             " do not match K/V");
    dm.past_len = pk.dim(2);
    kd = with_past(pk.to_double_vector(), dm.past_len, kd, kv_cur, bh_kv, dm.head);
    vd = with_past(pv.to_double_vector(), dm.past_len, vd, kv_cur, bh_kv, dm.v_head);
  }
  dm.kv_len = dm.past_len + kv_cur;
  const int64_t L = dm.kv_len, Sq = dm.q_len;

  std::vector<int64_t> nonpad;
  if (has_nonpad) {
    nonpad = ctx.input(6).to_int64_vector();
    if (static_cast<int64_t>(nonpad.size()) != dm.batch)
      return Status::invalid("Attention nonpad_kv_seqlen must have one entry per batch");
  }

  // Mask: broadcast right-aligned to [B, Hq, Sq, L]; a short last axis is padded with "masked".
  const bool has_mask = ctx.has_input(3);
  std::vector<double> mask;
  std::vector<int64_t> mask_strides(4, 0);
  int64_t mask_last = 0;
  if (has_mask) {
    const Tensor& m = ctx.input(3);
    if (m.rank() < 1 || m.rank() > 4) return Status::invalid("Attention attn_mask must have rank 1 to 4");
    const bool is_bool = m.dtype() == DType::kBool;
    if (!is_bool && !is_floating(m.dtype())) return Status::invalid("Attention attn_mask must be bool or floating");
    mask = m.to_double_vector();
    if (is_bool)
      for (double& x : mask) x = x != 0 ? 0.0 : kNegInf;
    const int64_t target[4] = {dm.batch, dm.q_heads, Sq, L};
    int64_t stride = 1;
    for (int d = 3, md = m.rank() - 1; md >= 0; --d, --md) {
      const int64_t size = m.dim(md);
      if (d == 3) {
        mask_last = size;
        if (size > L) return Status::invalid("Attention attn_mask is longer than the key sequence");
      } else if (size != 1 && size != target[d]) {
        return Status::invalid("Attention attn_mask " + m.describe() + " does not broadcast to the scores");
      }
      mask_strides[d] = (d == 3 || size != 1) ? stride : 0;
      stride *= size;
    }
  }
  const bool causal = node.attr_int("is_causal", 0) != 0;
  const int64_t left = node.attr_int("left_window_size", -1);
  const int64_t right = node.attr_int("right_window_size", -1);
  if (left < -1 || right < -1) return Status::invalid("Attention window sizes must be -1 or non-negative");
  const bool windowed = left >= 0 || right >= 0;
  auto offset_for = [&](int64_t b) -> int64_t {
    if (has_past) return dm.past_len;
    if (has_nonpad) return nonpad[b] - Sq;
    return 0;
  };
  auto bias_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
    double x = 0;
    if (has_mask) {
      if (j >= mask_last) x = kNegInf;
      else x = mask[b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + j * mask_strides[3]];
    }
    const int64_t off = offset_for(b);
    if (causal && j > i + off) x += kNegInf;
    if (windowed) {
      const int64_t diff = i + off - j;
      if ((left >= 0 && diff > left) || (right >= 0 && -diff > right)) x += kNegInf;
    }
    if (has_nonpad && j >= nonpad[b]) x += kNegInf;
    return x;
  };

  double scale = node.has_attr("scale") ? node.attr_float("scale", 1.0f) : 1.0 / std::sqrt(static_cast<double>(dm.head));
  const double s = round_to(T, std::sqrt(scale));
  const double softcap = node.attr_float("softcap", 0.0f);
  const int64_t mode = node.attr_int("qk_matmul_output_mode", 0);
  DType P = T;
  if (node.has_attr("softmax_precision")) {
    FERRY_ASSIGN_OR_RETURN(P, dtype_from_onnx(node.attr_int("softmax_precision", 1)));
    if (!is_floating(P)) return Status::invalid("Attention softmax_precision must be a floating type");
  }

  for (double& x : qd) x = round_to(T, x * s);
  std::vector<double> ks(kd.size());
  for (size_t i = 0; i < kd.size(); ++i) ks[i] = round_to(T, kd[i] * s);

  const int64_t reps = dm.q_heads / dm.kv_heads;
  const int64_t Dv = dm.v_head;
  std::vector<double> y(dm.batch * dm.q_heads * Sq * Dv);
  std::vector<double> qk_out(mode >= 0 ? dm.batch * dm.q_heads * Sq * L : 0);
  std::vector<double> qk(L), bias(L), p(L);
  for (int64_t b = 0; b < dm.batch; ++b) {
    for (int64_t h = 0; h < dm.q_heads; ++h) {
      const int64_t hk = h / reps;
      const double* kbase = ks.data() + (b * dm.kv_heads + hk) * L * dm.head;
      const double* vbase = vd.data() + (b * dm.kv_heads + hk) * L * Dv;
      for (int64_t i = 0; i < Sq; ++i) {
        const double* qrow = qd.data() + ((b * dm.q_heads + h) * Sq + i) * dm.head;
        double bias_max = kNegInf;
        for (int64_t j = 0; j < L; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < dm.head; ++d) acc += qrow[d] * kbase[j * dm.head + d];
          double x = round_to(T, acc);
          if (softcap > 0) x = round_to(T, round_to(T, std::tanh(round_to(T, x / softcap))) * softcap);
          qk[j] = x;
          bias[j] = bias_at(b, h, i, j);
          bias_max = nan_max(bias_max, bias[j]);
        }
        double* qko = qk_out.data() + ((b * dm.q_heads + h) * Sq + i) * L;
        double row_max = kNegInf;
        for (int64_t j = 0; j < L; ++j) {
          const double with_bias = round_to(T, qk[j] + bias[j]);
          if (mode == 2) qko[j] = with_bias;
          else if (mode != 3) qko[j] = qk[j];
          p[j] = round_to(P, with_bias);
          row_max = nan_max(row_max, p[j]);
        }
        const double safe_max = std::isinf(row_max) && row_max < 0 ? 0.0 : row_max;
        double sum = 0;
        for (int64_t j = 0; j < L; ++j) {
          p[j] = round_to(P, std::exp(round_to(P, p[j] - safe_max)));
          sum += p[j];
        }
        sum = round_to(P, sum);
        if (sum == 0) sum = 1;
        const bool fully_masked = std::isinf(bias_max) && bias_max < 0;
        for (int64_t j = 0; j < L; ++j) {
          p[j] = fully_masked ? 0.0 : round_to(P, p[j] / sum);
          if (mode == 3) qko[j] = p[j];
          p[j] = round_to(T, p[j]);
        }
        for (int64_t e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < L; ++j) acc += p[j] * vbase[j * Dv + e];
          const double out = round_to(T, acc);
          if (dm.packed) y[(b * Sq + i) * dm.q_heads * Dv + h * Dv + e] = out;
          else y[((b * dm.q_heads + h) * Sq + i) * Dv + e] = out;
        }
      }
    }
  }
  std::vector<int64_t> ydims = dm.packed ? std::vector<int64_t>{dm.batch, Sq, dm.q_heads * Dv}
                                         : std::vector<int64_t>{dm.batch, dm.q_heads, Sq, Dv};
  FERRY_ASSIGN_OR_RETURN(Tensor yt, from_doubles(T, ydims, y));
  ctx.set_output(0, std::move(yt));
  if (ctx.wants_output(1)) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, from_doubles(T, {dm.batch, dm.kv_heads, L, dm.head}, kd));
    ctx.set_output(1, std::move(t));
  }
  if (ctx.wants_output(2)) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, from_doubles(T, {dm.batch, dm.kv_heads, L, Dv}, vd));
    ctx.set_output(2, std::move(t));
  }
  if (ctx.wants_output(3)) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, from_doubles(T, {dm.batch, dm.q_heads, Sq, L}, qk_out));
    ctx.set_output(3, std::move(t));
  }
  return Status();
}

Dim dim_of(const ir::Value* v, int i) {
  if (!v || !v->shape || i >= static_cast<int>(v->shape->size())) return Dim();
  return (*v->shape)[i];
}

Dim product_or_unknown(const Dim& a, int64_t mul, int64_t div) {
  if (!a.is_static() || div <= 0) return Dim();
  return Dim(a.value / div * mul);
}

Status attention_infer(InferContext& ctx) {
  const DType T = ctx.input_dtype(0);
  const int rank = ctx.input_rank(0);
  const ir::Node& node = ctx.node();
  const ir::Value *q = ctx.input(0), *k = ctx.input(1), *v = ctx.input(2);
  for (int i = 0; i < 4; ++i) ctx.set_output_dtype(i, T);
  if (rank != 3 && rank != 4) return Status();
  const bool packed = rank == 3;
  const int64_t qh = node.attr_int("q_num_heads", 0), kvh = node.attr_int("kv_num_heads", 0);
  Dim batch = dim_of(q, 0);
  Dim q_heads = packed ? Dim(qh > 0 ? qh : -1) : dim_of(q, 1);
  Dim kv_heads = packed ? Dim(kvh > 0 ? kvh : -1) : dim_of(k, 1);
  Dim q_len = dim_of(q, packed ? 1 : 2);
  Dim head = packed ? product_or_unknown(dim_of(q, 2), 1, qh) : dim_of(q, 3);
  Dim v_head = packed ? product_or_unknown(dim_of(v, 2), 1, kvh) : dim_of(v, 3);
  Dim kv_cur = dim_of(k, packed ? 1 : 2);
  Dim kv_len = kv_cur;
  if (ctx.has_input(4)) {
    Dim p = dim_of(ctx.input(4), 2);
    kv_len = p.is_static() && kv_cur.is_static() ? Dim(p.value + kv_cur.value) : Dim();
  }
  if (packed) {
    Dim hidden = (v_head.is_static() && qh > 0) ? Dim(v_head.value * qh) : Dim();
    ctx.set_output(0, T, Shape{batch, q_len, hidden});
  } else {
    ctx.set_output(0, T, Shape{batch, q_heads, q_len, v_head});
  }
  ctx.set_output(1, T, Shape{batch, kv_heads, kv_len, head});
  ctx.set_output(2, T, Shape{batch, kv_heads, kv_len, v_head});
  ctx.set_output(3, T, Shape{batch, q_heads, q_len, kv_len});
  return Status();
}

}  // namespace

void register_attention(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Attention", .since_version = 23, .min_inputs = 3, .max_inputs = 7,
                 .infer = attention_infer, .kernel = attention_kernel});
}

}  // namespace ferry::ops
