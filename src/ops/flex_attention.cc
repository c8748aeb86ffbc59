// FlexAttention (ai.onnx.preview 1): scaled dot-product attention over rank-4 Q/K/V with optional
// score_mod / prob_mod subgraphs (run through the SubgraphRunner) and grouped KV heads (query head h
// uses KV head h / (Hq / Hkv)). Rounding follows the reference: Q and K are pre-scaled by sqrt(scale)
// in the input dtype, the scores are stored in the input dtype and then in the softmax precision, in
// which the softmax, the modifiers and Probs @ V run; the result is cast back to V's dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

// softmax_precision is an ONNX TensorProto element type.
Result<DType> softmax_dtype(const ir::Node& node, DType input) {
  if (!node.has_attr("softmax_precision")) return input == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  switch (node.attr_int("softmax_precision", 0)) {
    case 1: return DType::kFloat32;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    case 16: return DType::kBFloat16;
    default:
      return Status::invalid("softmax_precision must be FLOAT (1), FLOAT16 (10), DOUBLE (11) or BFLOAT16 (16); got " +
                             std::to_string(node.attr_int("softmax_precision", 0)));
  }
}

// Runs a modifier subgraph on t (dims [B, Hq, L, S], dtype S) and returns its output in dtype S.
Result<Tensor> run_modifier(KernelContext& ctx, const char* name, Tensor t) {
  const ir::Graph* body = ctx.node().attr_graph(name);
  if (!body) return Status::invalid(std::string(name) + " must be a graph attribute");
  if (body->inputs.size() != 1 || body->outputs.size() != 1)
    return Status::invalid(std::string(name) + " must have exactly one input and one output; it has " +
                           std::to_string(body->inputs.size()) + " and " + std::to_string(body->outputs.size()));
  if (!ctx.runner()) return Status::internal(std::string("no subgraph runner to run ") + name);
  const std::vector<int64_t> dims = t.dims();
  const DType dt = t.dtype();
  FERRY_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runner()->run(*body, {RtValue(std::move(t))}));
  if (outs.size() != 1 || !outs[0].is_tensor()) return Status::invalid(std::string(name) + " must produce one tensor");
  const Tensor& out = outs[0].tensor;
  if (out.dims() != dims)
    return Status::invalid(std::string(name) + " must keep the shape " + dims_to_string(dims) + "; it produced " +
                           out.describe());
  if (out.dtype() == DType::kBool || out.dtype() == DType::kUndefined)
    return Status::invalid(std::string(name) + " produced " + out.describe());
  return out.dtype() == dt ? out : out.cast(dt);
}

struct AttentionDims {
  int64_t B, Hq, Hkv, L, S, E, Ev;
};

// T: the input dtype; SM: the softmax precision.
template <class T, class SM>
Status run_flex_attention(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const AttentionDims& d,
                          double scale) {
  using C = compute_t<T>;
  using CS = compute_t<SM>;
  const int64_t group = d.Hq / d.Hkv;
  const T sqrt_scale = T(static_cast<C>(std::sqrt(static_cast<float>(scale))));
  std::vector<T> qs(static_cast<size_t>(q.numel())), ks(static_cast<size_t>(k.numel()));
  for (int64_t i = 0; i < q.numel(); ++i) qs[i] = T(static_cast<C>(C(q.data<T>()[i]) * C(sqrt_scale)));
  for (int64_t i = 0; i < k.numel(); ++i) ks[i] = T(static_cast<C>(C(k.data<T>()[i]) * C(sqrt_scale)));

  const std::vector<int64_t> score_dims{d.B, d.Hq, d.L, d.S};
  FERRY_ASSIGN_OR_RETURN(Tensor scores, Tensor::create(dtype_v<SM>, score_dims));
  SM* ps = scores.data<SM>();
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t l = 0; l < d.L; ++l)
        for (int64_t s = 0; s < d.S; ++s) {
          const T* qrow = qs.data() + ((b * d.Hq + h) * d.L + l) * d.E;
          const T* krow = ks.data() + ((b * d.Hkv + hk) * d.S + s) * d.E;
          double acc = 0;
          for (int64_t e = 0; e < d.E; ++e) acc += static_cast<double>(C(qrow[e])) * static_cast<double>(C(krow[e]));
          // Stored in T by the matmul, then converted to the softmax precision.
          ps[((b * d.Hq + h) * d.L + l) * d.S + s] = SM(static_cast<CS>(C(T(static_cast<C>(acc)))));
        }
    }
  if (ctx.node().has_attr("score_mod")) {
    FERRY_ASSIGN_OR_RETURN(scores, run_modifier(ctx, "score_mod", std::move(scores)));
    ps = scores.data<SM>();
  }
  // Softmax over the last axis, each step stored in SM.
  const int64_t rows = d.B * d.Hq * d.L;
  for (int64_t r = 0; r < rows; ++r) {
    SM* row = ps + r * d.S;
    CS mx = -std::numeric_limits<CS>::infinity();
    for (int64_t s = 0; s < d.S; ++s) mx = std::max(mx, CS(row[s]));
    double sum = 0;
    for (int64_t s = 0; s < d.S; ++s) {
      const SM shifted = SM(static_cast<CS>(CS(row[s]) - mx));
      row[s] = SM(static_cast<CS>(std::exp(static_cast<double>(CS(shifted)))));
      sum += static_cast<double>(CS(row[s]));
    }
    const CS total = CS(SM(static_cast<CS>(sum)));
    for (int64_t s = 0; s < d.S; ++s) row[s] = SM(static_cast<CS>(CS(row[s]) / total));
  }
  if (ctx.node().has_attr("prob_mod")) {
    FERRY_ASSIGN_OR_RETURN(scores, run_modifier(ctx, "prob_mod", std::move(scores)));
    ps = scores.data<SM>();
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, v.dtype(), {d.B, d.Hq, d.L, d.Ev}));
  T* po = out->data<T>();
  const T* pv = v.data<T>();
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t l = 0; l < d.L; ++l) {
        const SM* prow = ps + ((b * d.Hq + h) * d.L + l) * d.S;
        for (int64_t e = 0; e < d.Ev; ++e) {
          double acc = 0;
          for (int64_t s = 0; s < d.S; ++s) {
            const SM vs = SM(static_cast<CS>(C(pv[((b * d.Hkv + hk) * d.S + s) * d.Ev + e])));
            acc += static_cast<double>(CS(prow[s])) * static_cast<double>(CS(vs));
          }
          po[((b * d.Hq + h) * d.L + l) * d.Ev + e] = T(static_cast<C>(CS(SM(static_cast<CS>(acc)))));
        }
      }
    }
  return Status();
}

Status flex_attention_kernel(KernelContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (!ctx.has_input(i) || !ctx.input_value(i)->is_tensor())
      return Status::invalid("input " + std::to_string(i) + " must be a tensor");
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return Status::invalid("Q, K and V must be rank 4; got " + q.describe() + ", " + k.describe() + ", " + v.describe());
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    return Status::invalid("Q, K and V must share one dtype; got " + q.describe() + ", " + k.describe() + ", " + v.describe());
  AttentionDims d{q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
  if (k.dim(0) != d.B || v.dim(0) != d.B) return Status::invalid("Q, K and V must share the batch size");
  if (v.dim(1) != d.Hkv) return Status::invalid("K and V must have the same number of heads");
  if (v.dim(2) != d.S) return Status::invalid("K and V must have the same sequence length");
  if (k.dim(3) != d.E) return Status::invalid("Q and K must have the same head size");
  if (d.Hkv <= 0 || d.Hq % d.Hkv != 0)
    return Status::invalid("Q's heads (" + std::to_string(d.Hq) + ") must be a multiple of K/V's heads (" +
                           std::to_string(d.Hkv) + ")");
  const double scale =
      ctx.node().has_attr("scale") ? ctx.node().attr_float("scale", 1.0f) : 1.0 / std::sqrt(static_cast<double>(d.E));
  FERRY_ASSIGN_OR_RETURN(DType sm, softmax_dtype(ctx.node(), q.dtype()));
  Status st;
  bool known = dispatch_floating(q.dtype(), [&](auto in_tag) {
    using T = decltype(in_tag);
    dispatch_floating(sm, [&](auto sm_tag) {
      using SM = decltype(sm_tag);
      st = run_flex_attention<T, SM>(ctx, q, k, v, d, scale);
    });
  });
  if (!known) return Status::unsupported("FlexAttention does not take " + std::string(dtype_name(q.dtype())));
  return st;
}

Status flex_attention_infer(InferContext& ctx) {
  // The modifier bodies see a tensor of the declared input type; infer inside them too.
  for (const char* name : {"score_mod", "prob_mod"}) {
    auto it = ctx.node().attrs.find(name);
    if (it != ctx.node().attrs.end() && it->second.g) FERRY_RETURN_IF_ERROR(infer_graph(*it->second.g));
  }
  std::optional<Shape> shape;
  const std::optional<Shape>* qs = ctx.input_shape(0);
  const std::optional<Shape>* vs = ctx.input_shape(2);
  if (qs && *qs && (*qs)->size() == 4) {
    Dim ev = vs && *vs && (*vs)->size() == 4 ? (**vs)[3] : Dim();
    shape = Shape{(**qs)[0], (**qs)[1], (**qs)[2], ev};
  }
  ctx.set_output(0, ctx.input_dtype(0), shape);
  return Status();
}

}  // namespace

void register_flex_attention(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "FlexAttention",
      .domain = "ai.onnx.preview",
      .since_version = 1,
      .min_inputs = 3,
      .max_inputs = 3,
      .infer = flex_attention_infer,
      .kernel = flex_attention_kernel,
  });
}

}  // namespace ferry::ops
