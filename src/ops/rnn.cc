// The recurrent ops RNN, GRU and LSTM (opsets 7+; layout from 14). The shared driver in
// util/control_rnn.* handles directions, sequence_lens, initial states, activations and layout; this
// file holds the three cell equations from the ONNX spec.
#include <algorithm>
#include <vector>

#include "ops/op.h"
#include "ops/util/control_rnn.h"

namespace ferry::ops {
namespace {

double clipped(double v, double clip) { return clip > 0 ? std::max(-clip, std::min(clip, v)) : v; }

// Pre-activation of gate row `row`: x.W[row] + h.R[row] + Wb[row] + Rb[row].
double gate(const rnn::CellArgs& a, const std::vector<double>& h, int64_t row) {
  return rnn::dot(a.x, a.w + row * a.input, a.input) + rnn::dot(h.data(), a.r + row * a.hidden, a.hidden) +
         a.wb[row] + a.rb[row];
}

void rnn_cell(const rnn::CellArgs& a) {
  std::vector<double> h(a.h, a.h + a.hidden);
  for (int64_t k = 0; k < a.hidden; ++k) a.h[k] = a.act[0](clipped(gate(a, h, k), a.clip));
}

void gru_cell(const rnn::CellArgs& a, bool linear_before_reset) {
  const int64_t H = a.hidden;
  std::vector<double> h(a.h, a.h + H), z(H), r(H), rh(H);
  for (int64_t k = 0; k < H; ++k) {
    z[k] = a.act[0](clipped(gate(a, h, k), a.clip));
    r[k] = a.act[0](clipped(gate(a, h, H + k), a.clip));
    rh[k] = r[k] * h[k];
  }
  for (int64_t k = 0; k < H; ++k) {
    const int64_t row = 2 * H + k;
    const double xw = rnn::dot(a.x, a.w + row * a.input, a.input) + a.wb[row];
    double pre;
    if (linear_before_reset) {
      pre = xw + r[k] * (rnn::dot(h.data(), a.r + row * H, H) + a.rb[row]);
    } else {
      pre = xw + rnn::dot(rh.data(), a.r + row * H, H) + a.rb[row];
    }
    const double hh = a.act[1](clipped(pre, a.clip));
    a.h[k] = (1 - z[k]) * hh + z[k] * h[k];
  }
}

void lstm_cell(const rnn::CellArgs& a, bool input_forget) {
  const int64_t H = a.hidden;
  std::vector<double> h(a.h, a.h + H);
  for (int64_t k = 0; k < H; ++k) {
    const double c_prev = a.c[k];
    const double i = a.act[0](clipped(gate(a, h, k) + a.p[k] * c_prev, a.clip));
    double f = a.act[0](clipped(gate(a, h, 2 * H + k) + a.p[2 * H + k] * c_prev, a.clip));
    if (input_forget) f = 1 - i;
    const double cc = a.act[1](clipped(gate(a, h, 3 * H + k), a.clip));
    const double c = f * c_prev + i * cc;
    const double o = a.act[0](clipped(gate(a, h, H + k) + a.p[H + k] * c, a.clip));
    a.c[k] = c;
    a.h[k] = o * a.act[2](c);
  }
}

const rnn::Spec kRnn{"RNN", 1, {"Tanh"}, false};
const rnn::Spec kGru{"GRU", 3, {"Sigmoid", "Tanh"}, false};
const rnn::Spec kLstm{"LSTM", 4, {"Sigmoid", "Tanh", "Tanh"}, true};

}  // namespace

void register_rnn(OpRegistry& r) {
  r.add(OpSchema{.op_type = "RNN", .since_version = 7, .min_inputs = 3, .max_inputs = 6,
                 .infer = [](InferContext& ctx) { return rnn::infer(ctx, kRnn); },
                 .kernel = [](KernelContext& ctx) { return rnn::run(ctx, kRnn, rnn_cell); }});
  r.add(OpSchema{.op_type = "GRU", .since_version = 7, .min_inputs = 3, .max_inputs = 6,
                 .infer = [](InferContext& ctx) { return rnn::infer(ctx, kGru); },
                 .kernel = [](KernelContext& ctx) {
                   const bool lbr = ctx.node().attr_int("linear_before_reset", 0) != 0;
                   return rnn::run(ctx, kGru, [lbr](const rnn::CellArgs& a) { gru_cell(a, lbr); });
                 }});
  r.add(OpSchema{.op_type = "LSTM", .since_version = 7, .min_inputs = 3, .max_inputs = 8,
                 .infer = [](InferContext& ctx) { return rnn::infer(ctx, kLstm); },
                 .kernel = [](KernelContext& ctx) {
                   const bool input_forget = ctx.node().attr_int("input_forget", 0) != 0;
                   return rnn::run(ctx, kLstm, [input_forget](const rnn::CellArgs& a) { lstm_cell(a, input_forget); });
                 }});
}

}  // namespace ferry::ops
