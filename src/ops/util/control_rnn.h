// The recurrence driver shared by RNN, GRU and LSTM: attribute parsing (direction, activations with
// alpha/beta lists, clip, layout), sequence_lens handling, and output assembly. Each op supplies a cell.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops::rnn {

struct Activation {
  std::string name;  // lower-case
  double alpha = 0, beta = 0;
  double operator()(double x) const;
};

// What one cell sees for one (direction, batch row, step): the input row, the previous state, the
// direction's weights (already sliced), and where to write the new state.
struct CellArgs {
  const double* x;        // [input]
  const double* w;        // [gates*hidden, input]
  const double* r;        // [gates*hidden, hidden]
  const double* wb;       // [gates*hidden] (zeros when B is absent)
  const double* rb;       // [gates*hidden]
  const double* p;        // [3*hidden] peepholes (LSTM; zeros when absent)
  const Activation* act;  // this direction's activations
  double clip;            // <= 0: no clipping
  int64_t input, hidden;
  double* h;              // [hidden] in: previous, out: new
  double* c;              // [hidden] LSTM cell state (in/out); unused otherwise
};
using Cell = std::function<void(const CellArgs&)>;

struct Spec {
  const char* op;
  int gates;                                   // 1 RNN, 3 GRU, 4 LSTM
  std::vector<std::string> default_activations;  // per direction
  bool has_cell_state;                         // LSTM
};

// x . row (dot product of length n).
inline double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

Status run(KernelContext& ctx, const Spec& spec, const Cell& cell);
Status infer(InferContext& ctx, const Spec& spec);

}  // namespace ferry::ops::rnn
