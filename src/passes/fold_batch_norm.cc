// Folds an inference BatchNormalization into the preceding Conv/ConvTranspose/Gemm/MatMul when that
// producer has constant weights and BN is the only reader of its output:
//   s = scale / sqrt(var + eps), t = B - mean * s;  W'[channel] = W[channel] * s, bias' = bias * s + t.
// BN after MatMul [M, K] x const [K, N] scales W's columns and becomes Add(t). training_mode BN, and a
// BN after anything else, is left alone (the backends run it as one op).
#include <cmath>

#include "passes/passes.h"

namespace ferry::passes {

namespace {
Tensor from_doubles(const std::vector<double>& v, std::vector<int64_t> dims, DType dt) {
  return Tensor::from_vector(v, std::move(dims)).cast(dt);
}

// new_bias[m] = old_bias[m] * s[m] + t[m] (old bias 0 when absent).
std::vector<double> folded_bias(const ir::Value* old_bias, const BnParams& p) {
  std::vector<double> b(p.s.size(), 0.0);
  if (old_bias) b = old_bias->initializer.to_double_vector();
  for (size_t m = 0; m < b.size(); ++m) b[m] = b[m] * p.s[m] + p.t[m];
  return b;
}

// Conv W [M, C/g, k...]: output channel m is W's dim 0. ConvTranspose W [C, M/g, k...]: output channel
// of W[c, j] is (c / (C/g)) * (M/g) + j.
bool fold_into_conv(ir::Graph& g, ir::Node& conv, const BnParams& p) {
  if (!conv.has_input(1) || !conv.inputs[1]->is_constant()) return false;
  if (conv.has_input(2) && !conv.inputs[2]->is_constant()) return false;
  const Tensor& w = conv.inputs[1]->initializer;
  if (!is_floating(w.dtype()) || w.rank() < 3) return false;
  const int64_t M = static_cast<int64_t>(p.s.size());
  const bool transpose = conv.op_type == "ConvTranspose";
  const int64_t group = conv.attr_int("group", 1);
  if (group <= 0) return false;
  int64_t inner = 1;
  for (int i = 2; i < w.rank(); ++i) inner *= w.dim(i);
  std::vector<double> wv = w.to_double_vector();
  if (!transpose) {
    if (w.dim(0) != M) return false;
    const int64_t per = w.numel() / M;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < per; ++i) wv[m * per + i] *= p.s[m];
  } else {
    const int64_t C = w.dim(0), Mg = w.dim(1);
    if (Mg * group != M || C % group != 0) return false;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < Mg; ++j) {
        const int64_t m = (c / (C / group)) * Mg + j;
        for (int64_t i = 0; i < inner; ++i) wv[(c * Mg + j) * inner + i] *= p.s[m];
      }
  }
  if (conv.has_input(2) && conv.inputs[2]->initializer.numel() != M) return false;
  conv.inputs[1] = add_constant(g, conv.inputs[1]->name + "_bn", from_doubles(wv, w.dims(), w.dtype()));
  std::vector<double> b = folded_bias(conv.has_input(2) ? conv.inputs[2] : nullptr, p);
  ir::Value* nb = add_constant(g, conv.name + "_bn_bias", from_doubles(b, {M}, w.dtype()));
  if (conv.inputs.size() < 3) conv.inputs.resize(3, nullptr);
  conv.inputs[2] = nb;
  return true;
}

// Gemm Y [M, N] with BN over N (channel axis 1): scale B's columns, C' = (beta*C)*s + t, beta = 1.
bool fold_into_gemm(ir::Graph& g, ir::Node& gemm, const BnParams& p) {
  if (!gemm.has_input(1) || !gemm.inputs[1]->is_constant()) return false;
  if (gemm.has_input(2) && !gemm.inputs[2]->is_constant()) return false;
  const Tensor& b = gemm.inputs[1]->initializer;
  if (b.rank() != 2 || !is_floating(b.dtype())) return false;
  const bool tb = gemm.attr_int("transB", 0) != 0;
  const int64_t N = tb ? b.dim(0) : b.dim(1), K = tb ? b.dim(1) : b.dim(0);
  if (N != static_cast<int64_t>(p.s.size())) return false;
  std::vector<double> bv = b.to_double_vector();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) bv[tb ? n * K + k : k * N + n] *= p.s[n];
  std::vector<double> cv(N, 0.0);
  if (gemm.has_input(2)) {
    const Tensor& c = gemm.inputs[2]->initializer;
    // Only C that is the same for every row (scalar, [N], [1, N]) stays a [N] bias.
    const bool per_col = c.numel() == 1 || (c.numel() == N && (c.rank() == 1 || (c.rank() == 2 && c.dim(0) == 1)));
    if (!per_col) return false;
    const double beta = gemm.attr_float("beta", 1.0f);
    for (int64_t n = 0; n < N; ++n) cv[n] = beta * c.as_double(c.numel() == 1 ? 0 : n);
  }
  for (int64_t n = 0; n < N; ++n) cv[n] = cv[n] * p.s[n] + p.t[n];
  gemm.inputs[1] = add_constant(g, gemm.inputs[1]->name + "_bn", from_doubles(bv, b.dims(), b.dtype()));
  if (gemm.inputs.size() < 3) gemm.inputs.resize(3, nullptr);
  gemm.inputs[2] = add_constant(g, gemm.name + "_bn_bias", from_doubles(cv, {N}, b.dtype()));
  gemm.attrs["beta"] = make_float(1.0f);
  return true;
}
}  // namespace

Result<int> fold_batch_norm(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& bn, const Uses& uses) -> Result<bool> {
    if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || !bn.has_input(0) || !bn.outputs[0]) return false;
    auto p = bn_params(bn);
    if (!p) return false;
    ir::Value* x = bn.inputs[0];
    ir::Node* prod = x->producer;
    const DType dt = bn.inputs[1]->initializer.dtype();
    if (!prod || !prod->domain.empty() || !uses.single_use(x) || prod->num_outputs() != 1 || x->dtype != dt) return false;
    bool folded = false;
    ir::Value* y = bn.outputs[0];
    if (prod->op_type == "Conv" || prod->op_type == "ConvTranspose") {
      folded = fold_into_conv(g, *prod, *p);
    } else if (prod->op_type == "Gemm") {
      folded = fold_into_gemm(g, *prod, *p);
    } else if (prod->op_type == "MatMul") {
      // [M, K] x const [K, N] -> [M, N]: BN's channel axis 1 is N. W's columns scale; t becomes an Add.
      auto ys = x->shape;
      const Tensor* w = constant_of(prod->inputs[1]);
      if (ys && ys->size() == 2 && w && w->rank() == 2 && w->dim(1) == static_cast<int64_t>(p->s.size()) &&
          is_floating(w->dtype())) {
        std::vector<double> wv = w->to_double_vector();
        const int64_t K = w->dim(0), N = w->dim(1);
        for (int64_t k = 0; k < K; ++k)
          for (int64_t n = 0; n < N; ++n) wv[k * N + n] *= p->s[n];
        prod->inputs[1] = add_constant(g, prod->inputs[1]->name + "_bn", from_doubles(wv, w->dims(), w->dtype()));
        ir::Value* t = add_constant(g, bn.name + "_shift", from_doubles(p->t, {N}, dt));
        replace_with(g, {&bn}, "Add", "", std::max(bn.opset, 7), {x, t}, y);
        return true;
      }
      return false;
    }
    if (!folded) return false;
    // The producer's node now computes BN's result: it takes BN's output value and merged provenance.
    const std::string op = prod->op_type;
    const int opset = prod->opset;
    std::vector<ir::Value*> ins = prod->inputs;
    std::map<std::string, ir::Attribute> attrs = prod->attrs;
    replace_with(g, {prod, &bn}, op, "", opset, ins, y)->attrs = std::move(attrs);
    return true;
  });
}

}  // namespace ferry::passes
