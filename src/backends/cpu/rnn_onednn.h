// An ONNX LSTM on oneDNN's lstm_forward primitive (rnn.cc uses it where oneDNN has a brgemm
// implementation, i.e. AVX-512, and a batch of at least two rows; its own GEMM path runs the rest).
//
// Why: the recurrent product of a step, [batch, hidden] x [hidden, 4 hidden], re-reads the whole
// recurrent weight (4 MB at hidden 512) every step. rnn.cc's sgemm path calls oneDNN's sgemm per step,
// which repacks that weight each time; oneDNN's LSTM packs it once into brgemm blocks and fuses the
// cell's update into the GEMM's epilogue. lstm_2layer (hidden 512, 100 steps) at batch 8 on AMD Zen 4,
// 2 threads: 17.7 + 22.7 ms for its two LSTMs on the sgemm path against about 14.5 ms per layer here.
//
// What it takes: default activations, no clip, no input_forget, every sequence at full length (no
// sequence_lens shorter than the sequence), optional biases, initial states and peepholes, every
// direction and both layouts. ONNX orders the gates [i, o, f, c] and the peepholes [i, o, f]; oneDNN
// [i, f, c, o] and [i, f, o], so the weights are copied in oneDNN's order once (when constant).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <dnnl.hpp>

namespace ferry::backends::cpu {

struct LstmShape {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse = false;      // direction "reverse" (dirs 1)
  bool batch_first = false;  // layout 1: X [batch, seq, input]
  bool peepholes = false;
  bool operator==(const LstmShape& o) const {
    return seq == o.seq && batch == o.batch && input == o.input && hidden == o.hidden && dirs == o.dirs &&
           reverse == o.reverse && batch_first == o.batch_first && peepholes == o.peepholes;
  }
};

// The ONNX tensors of one run (plain float32, ONNX layouts; absent optional inputs null) and where the
// results go: y as [seq][dirs][batch][hidden], yh and yc as [dirs][batch][hidden] (rnn.cc's buffers,
// which its write_outputs turns into the ONNX outputs of either layout).
struct LstmTensors {
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *p = nullptr, *h0 = nullptr, *c0 = nullptr;
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
};

class OnednnLstm {
 public:
  // Null when oneDNN has no brgemm implementation for this shape (then rnn.cc's own path runs).
  static std::unique_ptr<OnednnLstm> create(const LstmShape& shape);
  const LstmShape& shape() const { return shape_; }
  std::string impl() const { return impl_; }
  // Copies W, R, the biases and the peepholes into the primitive's layouts. Once for constant weights.
  void prepare_weights(const LstmTensors& t);
  // Runs the primitive on t (weights from the last prepare_weights). Throws dnnl::error.
  void run(const LstmTensors& t);

 private:
  OnednnLstm() = default;
  LstmShape shape_;
  std::string impl_;
  dnnl::lstm_forward::primitive_desc pd_;
  dnnl::lstm_forward prim_;
  dnnl::memory weights_layer_, weights_iter_, bias_, peephole_;
  std::vector<float> layer_out_, h0_, c0_;  // dst_layer when it is not y's layout; initial states in ldnc
};

}  // namespace ferry::backends::cpu
