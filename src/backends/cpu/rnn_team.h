// The recurrent steps of LSTM / GRU / RNN (rnn.cc) on one OpenMP team for the whole sequence.
//
// Each thread owns a block of hidden units of one direction: it keeps the rows of R that compute
// those units' gates packed for vec_step_gemm (K x 16 panels, packed once while R is the same
// constant), multiplies every step's hidden state by them for all batch rows at once, updates its
// units' cells and writes their outputs. The only synchronization is one barrier a step (two for a
// GRU without linear_before_reset, whose hidden gate multiplies r * h), because every unit of the
// next step reads the whole hidden state. What this replaced: per step an sgemm (which repacks R on
// every call, with a fork and join) and then the cells on one thread while the others waited
// (gru_2layer at batch 8: 24% of the time in libgomp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ferry::backends::cpu {

enum class CellKind { kLstm, kGru, kRnn };

struct TeamCell {
  CellKind kind = CellKind::kLstm;
  float clip = 0;  // > 0: clip every pre-activation
  bool input_forget = false, linear_before_reset = false;
  int64_t gates() const { return kind == CellKind::kLstm ? 4 : kind == CellKind::kGru ? 3 : 1; }
};

// One run's arrays, float32 in the ONNX operator's layouts.
struct TeamRun {
  int64_t seq = 0, batch = 0, hidden = 0, dirs = 1;
  bool batch_first = false;
  bool reverse = false;  // a single direction that runs backwards ("reverse")
  // Per direction, one after the other: X . W^T, rows in X's order (step-major, or batch-major with
  // batch_first), G * hidden columns.
  const float* xw = nullptr;
  const float* xb = nullptr;     // [dirs, G * hidden] the biases added to it (GRU: the hidden gate's Rb apart), zero without B
  const float* rb = nullptr;     // [dirs, 2 * G * hidden] biases (the GRU hidden gate's Rb is read here), or null
  const float* p = nullptr;      // LSTM peepholes [dirs, 3 * hidden], or null
  const float* h0 = nullptr;     // initial states [dirs, batch, hidden] ([batch, dirs, hidden] batch_first), or null
  const float* c0 = nullptr;
  const int64_t* lens = nullptr;  // per batch row: steps t >= lens keep the state and output zero
  // Y ([seq, dirs, batch, hidden], batch_first [batch, seq, dirs, hidden]), its steps past a row's
  // length zero-filled by the caller; or null (not wanted).
  float* y = nullptr;
  float* yh = nullptr;             // final states [dirs, batch, hidden]
  float* yc = nullptr;
};

class RecurrentTeam {
 public:
  // The team for R [dirs, G * hidden, hidden] on `threads` threads (fewer where there are not 16
  // hidden units per thread).
  static std::unique_ptr<RecurrentTeam> make(const TeamCell& cell, const float* r, int64_t dirs, int64_t hidden,
                                             int threads);
  ~RecurrentTeam();
  int threads() const { return threads_; }
  // Runs every step of every direction.
  void run(const TeamRun& run) const;

 private:
  struct Member;
  struct Scratch;  // a member's buffers for one run
  RecurrentTeam() = default;
  void first_phase(const Member& m, Scratch& sc, const TeamRun& run, int64_t s, std::vector<std::vector<float>>& h,
                   std::vector<std::vector<float>>& rh) const;
  void update_cells(const Member& m, Scratch& sc, const TeamRun& run, int64_t s,
                    std::vector<std::vector<float>>& h, std::vector<std::vector<float>>& c,
                    std::vector<std::vector<float>>& rh) const;
  static int64_t time_of(const TeamRun& run, int64_t dir, int64_t s);
  const float* hidden_gate_bias(const TeamRun& run, const Member& m) const;

  TeamCell cell_;
  int64_t hidden_ = 0, dirs_ = 1;
  int threads_ = 1;
  std::vector<Member> members_;  // each thread's, in thread order (a thread may hold one per direction)
};

}  // namespace ferry::backends::cpu
