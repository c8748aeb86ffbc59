#include "ops/util/control_rnn.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops/util/control_numeric.h"

namespace ferry::ops::rnn {

double Activation::operator()(double x) const {
  if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "tanh") return std::tanh(x);
  if (name == "relu") return x > 0 ? x : 0;
  if (name == "affine") return alpha * x + beta;
  if (name == "leakyrelu") return x >= 0 ? x : alpha * x;
  if (name == "thresholdedrelu") return x > alpha ? x : 0;
  if (name == "scaledtanh") return alpha * std::tanh(beta * x);
  if (name == "hardsigmoid") return std::max(0.0, std::min(1.0, alpha * x + beta));
  if (name == "elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
  if (name == "softsign") return x / (1 + std::fabs(x));
  if (name == "softplus") return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0);
  return x;
}

namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool known_activation(const std::string& n) {
  static const char* names[] = {"sigmoid", "tanh", "relu", "affine", "leakyrelu", "thresholdedrelu",
                                "scaledtanh", "hardsigmoid", "elu", "softsign", "softplus"};
  return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

// Default (alpha, beta) and how many of the two the function takes from the attribute lists.
void activation_defaults(const std::string& n, double& a, double& b, int& uses) {
  a = 0; b = 0; uses = 0;
  if (n == "leakyrelu") { a = 0.01; uses = 1; }
  else if (n == "thresholdedrelu" || n == "elu") { a = 1.0; uses = 1; }
  else if (n == "hardsigmoid") { a = 0.2; b = 0.5; uses = 2; }
  else if (n == "affine" || n == "scaledtanh") { a = 1.0; b = 0.0; uses = 2; if (n == "scaledtanh") b = 1.0; }
}

Result<std::vector<Activation>> parse_activations(const ir::Node& node, const Spec& spec, int dirs) {
  const ir::Attribute* a = node.attr("activations");
  std::vector<std::string> names;
  if (a && !a->strings.empty()) {
    names = a->strings;
    const size_t per = spec.default_activations.size();
    if (names.size() == per && dirs == 2) names.insert(names.end(), a->strings.begin(), a->strings.end());
    if (names.size() != per * dirs)
      return Status::invalid(std::string(spec.op) + " expects " + std::to_string(per * dirs) + " activations, got " +
                             std::to_string(a->strings.size()));
  } else {
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), spec.default_activations.begin(), spec.default_activations.end());
  }
  std::vector<float> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> acts;
  for (const std::string& raw : names) {
    Activation act;
    act.name = lower(raw);
    if (!known_activation(act.name)) return Status::invalid(std::string(spec.op) + ": unknown activation '" + raw + "'");
    int uses = 0;
    activation_defaults(act.name, act.alpha, act.beta, uses);
    if (uses >= 1 && ai < alphas.size()) act.alpha = alphas[ai++];
    if (uses >= 2 && bi < betas.size()) act.beta = betas[bi++];
    acts.push_back(act);
  }
  return acts;
}

// Swaps the two leading axes of a row-major [a, b, rest] buffer.
std::vector<double> swap01(const std::vector<double>& v, int64_t a, int64_t b, int64_t rest) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy(v.begin() + (i * b + j) * rest, v.begin() + (i * b + j + 1) * rest, out.begin() + (j * a + i) * rest);
  return out;
}

int directions_of(const std::string& d) { return d == "bidirectional" ? 2 : 1; }

}  // namespace

Status run(KernelContext& ctx, const Spec& spec, const Cell& cell) {
  const ir::Node& node = ctx.node();
  for (int i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) return Status::invalid(std::string(spec.op) + " needs X, W and R");
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& R = ctx.input(2);
  const DType T = X.dtype();
  if (!is_floating(T)) return Status::invalid(std::string(spec.op) + " needs a floating X");
  const std::string direction = node.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return Status::invalid(std::string(spec.op) + ": unknown direction '" + direction + "'");
  const int dirs = directions_of(direction);
  const bool batch_first = node.opset >= 14 && node.attr_int("layout", 0) != 0;
  if (X.rank() != 3 || W.rank() != 3 || R.rank() != 3)
    return Status::invalid(std::string(spec.op) + " X, W and R must be 3-D");
  const int64_t seq = batch_first ? X.dim(1) : X.dim(0);
  const int64_t batch = batch_first ? X.dim(0) : X.dim(1);
  const int64_t input = X.dim(2);
  const int64_t hidden = R.dim(2);
  const int64_t G = spec.gates;
  if (node.has_attr("hidden_size") && node.attr_int("hidden_size", 0) != hidden)
    return Status::invalid(std::string(spec.op) + " hidden_size disagrees with R");
  if (W.dim(0) != dirs || R.dim(0) != dirs || W.dim(1) != G * hidden || W.dim(2) != input || R.dim(1) != G * hidden)
    return Status::invalid(std::string(spec.op) + " W " + W.describe() + " / R " + R.describe() +
                           " do not match X " + X.describe() + ", direction " + direction);
  std::vector<double> x = X.to_double_vector();
  if (batch_first) x = swap01(x, batch, seq, input);  // -> [seq, batch, input]
  std::vector<double> w = W.to_double_vector(), r = R.to_double_vector();
  std::vector<double> b(dirs * 2 * G * hidden, 0.0);
  if (ctx.has_input(3)) {
    const Tensor& B = ctx.input(3);
    if (B.numel() != static_cast<int64_t>(b.size())) return Status::invalid(std::string(spec.op) + " B has the wrong size");
    b = B.to_double_vector();
  }
  std::vector<int64_t> lens(batch, seq);
  if (ctx.has_input(4)) {
    std::vector<int64_t> given = ctx.input(4).to_int64_vector();
    if (static_cast<int64_t>(given.size()) != batch)
      return Status::invalid(std::string(spec.op) + " sequence_lens must have one entry per batch row");
    for (int64_t i = 0; i < batch; ++i) {
      if (given[i] < 0 || given[i] > seq)
        return Status::invalid(std::string(spec.op) + " sequence_lens[" + std::to_string(i) + "] = " +
                               std::to_string(given[i]) + " is outside [0, " + std::to_string(seq) + "]");
      lens[i] = given[i];
    }
  }
  auto state_input = [&](int idx, std::vector<double>& out) -> Status {
    out.assign(dirs * batch * hidden, 0.0);
    if (!ctx.has_input(idx)) return Status();
    const Tensor& t = ctx.input(idx);
    if (t.numel() != static_cast<int64_t>(out.size()))
      return Status::invalid(std::string(spec.op) + " initial state " + t.describe() + " has the wrong size");
    out = t.to_double_vector();
    if (batch_first) out = swap01(out, batch, dirs, hidden);  // -> [dirs, batch, hidden]
    return Status();
  };
  std::vector<double> h0, c0;
  FERRY_RETURN_IF_ERROR(state_input(5, h0));
  if (spec.has_cell_state) FERRY_RETURN_IF_ERROR(state_input(6, c0));
  std::vector<double> p(dirs * 3 * hidden, 0.0);
  if (spec.has_cell_state && ctx.has_input(7)) {
    const Tensor& P = ctx.input(7);
    if (P.numel() != static_cast<int64_t>(p.size())) return Status::invalid("LSTM P has the wrong size");
    p = P.to_double_vector();
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<Activation> acts, parse_activations(node, spec, dirs));
  const double clip = node.has_attr("clip") ? node.attr_float("clip", 0.0f) : 0.0;
  const size_t per_dir = spec.default_activations.size();

  std::vector<double> y(seq * dirs * batch * hidden, 0.0), yh(dirs * batch * hidden), yc(dirs * batch * hidden);
  std::vector<double> h(hidden), c(hidden);
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    for (int64_t bi = 0; bi < batch; ++bi) {
      std::copy_n(h0.begin() + (d * batch + bi) * hidden, hidden, h.begin());
      if (spec.has_cell_state) std::copy_n(c0.begin() + (d * batch + bi) * hidden, hidden, c.begin());
      for (int64_t s = 0; s < lens[bi]; ++s) {
        const int64_t t = reverse ? lens[bi] - 1 - s : s;
        CellArgs a{x.data() + (t * batch + bi) * input,
                   w.data() + d * G * hidden * input,
                   r.data() + d * G * hidden * hidden,
                   b.data() + d * 2 * G * hidden,
                   b.data() + d * 2 * G * hidden + G * hidden,
                   p.data() + d * 3 * hidden,
                   acts.data() + d * per_dir,
                   clip, input, hidden, h.data(), c.data()};
        cell(a);
        std::copy(h.begin(), h.end(), y.begin() + ((t * dirs + d) * batch + bi) * hidden);
      }
      std::copy(h.begin(), h.end(), yh.begin() + (d * batch + bi) * hidden);
      std::copy(c.begin(), c.end(), yc.begin() + (d * batch + bi) * hidden);
    }
  }
  std::vector<int64_t> ydims{seq, dirs, batch, hidden}, sdims{dirs, batch, hidden};
  if (batch_first) {
    // [seq, dirs, batch, hidden] -> [batch, seq, dirs, hidden]
    std::vector<double> yt(y.size());
    for (int64_t t = 0; t < seq; ++t)
      for (int d = 0; d < dirs; ++d)
        for (int64_t bi = 0; bi < batch; ++bi)
          std::copy_n(y.begin() + ((t * dirs + d) * batch + bi) * hidden, hidden,
                      yt.begin() + ((bi * seq + t) * dirs + d) * hidden);
    y = std::move(yt);
    yh = swap01(yh, dirs, batch, hidden);
    yc = swap01(yc, dirs, batch, hidden);
    ydims = {batch, seq, dirs, hidden};
    sdims = {batch, dirs, hidden};
  }
  if (ctx.wants_output(0)) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, from_doubles(T, ydims, y));
    ctx.set_output(0, std::move(t));
  }
  if (ctx.wants_output(1)) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, from_doubles(T, sdims, yh));
    ctx.set_output(1, std::move(t));
  }
  if (spec.has_cell_state && ctx.wants_output(2)) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, from_doubles(T, sdims, yc));
    ctx.set_output(2, std::move(t));
  }
  return Status();
}

Status infer(InferContext& ctx, const Spec& spec) {
  const DType T = ctx.input_dtype(0);
  const int n_out = spec.has_cell_state ? 3 : 2;
  for (int i = 0; i < n_out; ++i) ctx.set_output_dtype(i, T);
  const ir::Node& node = ctx.node();
  const int64_t dirs = directions_of(node.attr_string("direction", "forward"));
  const bool batch_first = node.opset >= 14 && node.attr_int("layout", 0) != 0;
  Dim hidden = node.has_attr("hidden_size") ? Dim(node.attr_int("hidden_size", 0)) : Dim();
  if (!hidden.is_static() && ctx.input_rank(2) == 3) hidden = (**ctx.input_shape(2))[2];
  if (ctx.input_rank(0) != 3) return Status();
  const Shape& xs = **ctx.input_shape(0);
  const Dim seq = batch_first ? xs[1] : xs[0];
  const Dim batch = batch_first ? xs[0] : xs[1];
  ctx.set_output(0, T, batch_first ? Shape{batch, seq, Dim(dirs), hidden} : Shape{seq, Dim(dirs), batch, hidden});
  Shape state = batch_first ? Shape{batch, Dim(dirs), hidden} : Shape{Dim(dirs), batch, hidden};
  ctx.set_output(1, T, state);
  if (spec.has_cell_state) ctx.set_output(2, T, state);
  return Status();
}

}  // namespace ferry::ops::rnn
