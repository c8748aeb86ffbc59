// Vectorized float32 cell updates of the recurrent ops (rnn.cc), over the hidden units of one batch
// row: the sigmoids and tanhs of every step, which cost more than the step's matvec when computed one
// std::exp at a time. Compiled per x86 ISA with Highway, picked at run time.
#pragma once
#include <cstdint>

namespace ferry::backends::cpu {

// LSTM: g holds the gates' pre-activations in ONNX order [i, o, f, c] (4 * hidden), p the peepholes
// [i, o, f] (3 * hidden) or null; clip > 0 clips every pre-activation. Updates h and c in place.
void vec_lstm_cell(const float* g, const float* p, int64_t hidden, float clip, bool input_forget, float* h, float* c);
// GRU: g holds [z, r, h] pre-activations without the hidden gate's recurrent term, which is `hr`.
void vec_gru_cell(const float* g, const float* hr, int64_t hidden, float clip, float* h);
// GRU's reset gate applied: out = sigmoid(g_r) * (x + b) (b may be null; clip > 0 clips g_r): the
// hidden gate's recurrent term r * (h.R_h + Rb_h) with linear_before_reset, else r * h.
void vec_gru_reset(const float* g_r, const float* x, const float* b, int64_t hidden, float clip, float* out);
// RNN: h = tanh(g).
void vec_rnn_cell(const float* g, int64_t hidden, float clip, float* h);
// A recurrent step's product on one thread (and the packed GEMM's for few rows, vec_gemm.cc):
// C[rows, 16 * npanels] = A[rows, k] . P (+ C with accumulate), A and C row-major with leading dims lda
// and ldc, P `npanels` panels of 16 floats a row, 64-byte aligned, panel_rows (>= k) rows apart: the
// product reads each panel's first k rows (a K slice starts inside the panels; rnn_team.cc packs k).
void vec_step_gemm(const float* a, int64_t lda, int64_t rows, int64_t k, const float* panels, int64_t panel_rows,
                   int64_t npanels, float* c, int64_t ldc, bool accumulate);

}  // namespace ferry::backends::cpu
