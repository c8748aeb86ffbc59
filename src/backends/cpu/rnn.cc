// LSTM, GRU and RNN (float32, the default activations) on GEMMs instead of the reference kernel's
// per-element dot products: per direction the input projection of every step at once (one
// [seq*batch, input] x [input, gates*hidden] sgemm on every thread, both biases folded in where the
// cell adds them together), then the steps on one thread team (rnn_team.h: each thread the
// recurrent product and the cells of its block of hidden units, one barrier a step); an LSTM with a
// batch of 2 or more on oneDNN's lstm_forward where that has a brgemm kernel (rnn_onednn.h). Semantics as ops/util/control_rnn.cc (directions, sequence_lens, initial
// states, clip, peepholes, input_forget, linear_before_reset, layout); any input it does not take as
// given (bad sizes, other dtypes) goes to the reference kernel, which reports the error in its words.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include <omp.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/packed_linear.h"
#include "backends/cpu/rnn_onednn.h"
#include "backends/cpu/rnn_team.h"
#include "backends/cpu/thread_scratch.h"
#include "ops/op.h"

namespace ferry::backends::cpu {

namespace {

// From this batch up an LSTM runs on oneDNN's lstm_forward (AVX-512: brgemm) instead of the thread
// team. lstm_2layer (hidden 512, 100 steps), ms, oneDNN / team, Intel Xeon with AMX, 2 threads:
// batch 2 34.4/17.1, 4 36.1/18.8, 8 46.1/38.2, 16 68.5/71.2, 32 115.8/145.3; on an AMD Zen 4 oneDNN's
// is 3-5% faster at batch 4 and 8 and the team 4% at batch 2 (bench/README.md): one rule for both.
constexpr int64_t kOnednnLstmMinBatch = 16;

struct Cell {
  int gates;
  std::vector<std::string> activations;  // the defaults, per direction
};

const Cell* cell_of(const std::string& op) {
  static const Cell lstm{4, {"sigmoid", "tanh", "tanh"}}, gru{3, {"sigmoid", "tanh"}}, rnn{1, {"tanh"}};
  if (op == "LSTM") return &lstm;
  if (op == "GRU") return &gru;
  if (op == "RNN") return &rnn;
  return nullptr;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Default activations only (an `activations` list naming them is fine), float32 X/W/R.
bool rnn_supports(const ir::Node& n, const CpuOptions&) {
  const Cell* cell = cell_of(n.op_type);
  if (!cell || !n.domain.empty() || n.num_inputs() < 3) return false;
  for (int i = 0; i < 3; ++i)
    if (!n.has_input(i) || n.inputs[i]->dtype != DType::kFloat32) return false;
  if (n.has_attr("activation_alpha") || n.has_attr("activation_beta")) return false;
  if (n.has_attr("activations")) {
    const auto& names = n.attrs.at("activations").strings;
    for (size_t i = 0; i < names.size(); ++i)
      if (lower(names[i]) != cell->activations[i % cell->activations.size()]) return false;
  }
  return true;
}

// Everything one run needs, read from the inputs (float32, checked against each other).
struct RnnRun {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, G = 1;
  bool batch_first = false;
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *p = nullptr, *h0 = nullptr, *c0 = nullptr;
  std::vector<int64_t> lens;
};

class RnnKernel : public Kernel {
 public:
  RnnKernel(const ir::Node& node, const Cell& cell) : node_(node), cell_(cell) {
    direction_ = node.attr_string("direction", "forward");
    clip_ = node.has_attr("clip") ? node.attr_float("clip", 0.0f) : 0.0f;
    input_forget_ = node.attr_int("input_forget", 0) != 0;
    linear_before_reset_ = node.attr_int("linear_before_reset", 0) != 0;
    reference_ = ops::OpRegistry::global().find(node.domain, node.op_type, node.opset);
    for (int i : {1, 2, 3, 7})  // W, R, B, P
      if (i < node.num_inputs() && node.has_input(i) && !node.inputs[i]->is_constant()) weights_constant_ = false;
  }
  // The path the last run took: oneDNN's LSTM (rnn_onednn.h) or the thread team (rnn_team.h).
  std::string name() const override {
    return lstm_ && used_onednn_ ? "cpu:onednn:lstm:" + lstm_->impl() : "cpu:vec:rnn_team:" + lower(node_.op_type);
  }

  Status run(ops::KernelContext& ctx) override {
    if (!reference_) return Status::unsupported(node_.label() + ": no reference kernel");
    RnnRun r;
    if (!read_inputs(ctx, r)) return reference_->kernel(ctx);
    const int64_t H = r.hidden, B = r.batch, GH = r.G * H;
    std::vector<float> yh(r.dirs * B * H), yc(r.dirs * B * H);
    used_onednn_ = false;
    if (OnednnLstm* l = onednn_lstm_for(r)) {
      std::vector<float> y(r.seq * r.dirs * B * H);
      try {
        run_onednn_lstm(r, *l, y, yh, yc);
        used_onednn_ = true;
        return write_outputs(ctx, r, y, yh, yc);
      } catch (const dnnl::error& e) {
        return Status::internal(node_.label() + ": oneDNN's LSTM failed: " + e.what());
      }
    }
    // X's projections in the thread's scratch (not page-faulted in again every run); the biases are
    // added with the recurrent products, and Y is written into the output where the run wants it.
    const int64_t per_dir = r.seq * B * GH;
    FERRY_ASSIGN_OR_RETURN(char* scratch, thread_scratch(static_cast<size_t>(r.dirs * per_dir) * sizeof(float)));
    float* xw = reinterpret_cast<float*>(scratch);
    std::vector<float> xb(r.dirs * GH, 0.0f);  // zero without B
    for (int64_t d = 0; d < r.dirs; ++d) {  // big GEMMs: every thread
      FERRY_RETURN_IF_ERROR(project_inputs(r, d, xw + d * per_dir));
      if (r.b) fold_biases(r, d, xb.data() + d * GH);
    }
    FERRY_ASSIGN_OR_RETURN(const RecurrentTeam* team, team_for(r));
    TeamRun t;
    t.seq = r.seq, t.batch = B, t.hidden = H, t.dirs = r.dirs, t.batch_first = r.batch_first;
    t.reverse = direction_ == "reverse";
    t.xw = xw, t.xb = xb.data(), t.rb = r.b, t.p = r.p, t.h0 = r.h0, t.c0 = r.c0;
    t.lens = r.lens.data();
    FERRY_ASSIGN_OR_RETURN(t.y, sequence_output(ctx, r));
    t.yh = yh.data(), t.yc = yc.data();
    team->run(t);
    return write_states(ctx, r, yh, yc);
  }

 private:
  // False when the inputs are not what this kernel takes (the reference kernel then runs and reports).
  bool read_inputs(ops::KernelContext& ctx, RnnRun& r) const {
    for (int i = 0; i < 3; ++i)
      if (!ctx.has_input(i) || ctx.input(i).dtype() != DType::kFloat32 || !ctx.input(i).is_plain() ||
          ctx.input(i).rank() != 3)
        return false;
    if (direction_ != "forward" && direction_ != "reverse" && direction_ != "bidirectional") return false;
    const Tensor &X = ctx.input(0), &W = ctx.input(1), &R = ctx.input(2);
    r.batch_first = node_.opset >= 14 && node_.attr_int("layout", 0) != 0;
    r.seq = r.batch_first ? X.dim(1) : X.dim(0);
    r.batch = r.batch_first ? X.dim(0) : X.dim(1);
    r.input = X.dim(2);
    r.hidden = R.dim(2);
    r.dirs = direction_ == "bidirectional" ? 2 : 1;
    r.G = cell_.gates;
    const int64_t GH = r.G * r.hidden;
    if (node_.has_attr("hidden_size") && node_.attr_int("hidden_size", 0) != r.hidden) return false;
    if (W.dim(0) != r.dirs || R.dim(0) != r.dirs || W.dim(1) != GH || W.dim(2) != r.input || R.dim(1) != GH) return false;
    r.x = X.data<float>();
    r.w = W.data<float>();
    r.r = R.data<float>();
    auto optional = [&](int i, int64_t numel, const float** out) {
      if (!ctx.has_input(i)) return true;
      const Tensor& t = ctx.input(i);
      if (t.dtype() != DType::kFloat32 || !t.is_plain() || t.numel() != numel) return false;
      *out = t.data<float>();
      return true;
    };
    if (!optional(3, r.dirs * 2 * GH, &r.b)) return false;
    if (!optional(5, r.dirs * r.batch * r.hidden, &r.h0)) return false;
    if (node_.op_type == "LSTM" && (!optional(6, r.dirs * r.batch * r.hidden, &r.c0) || !optional(7, r.dirs * 3 * r.hidden, &r.p)))
      return false;
    r.lens.assign(r.batch, r.seq);
    if (ctx.has_input(4)) {
      const Tensor& L = ctx.input(4);
      if (L.numel() != r.batch || !is_integer(L.dtype())) return false;
      for (int64_t i = 0; i < r.batch; ++i) {
        r.lens[i] = L.as_int64(i);
        if (r.lens[i] < 0 || r.lens[i] > r.seq) return false;
      }
    }
    return true;
  }

  // oneDNN's LSTM for this run, or null: a batch under kOnednnLstmMinBatch (the thread team is faster
  // there), clip, input_forget or shorter sequences (oneDNN has none of them), or no brgemm kernel for
  // the shape.
  OnednnLstm* onednn_lstm_for(const RnnRun& r) {
    if (node_.op_type != "LSTM" || r.batch < kOnednnLstmMinBatch || clip_ > 0 || input_forget_) return nullptr;
    for (int64_t len : r.lens)
      if (len != r.seq) return nullptr;
    LstmShape s;
    s.seq = r.seq, s.batch = r.batch, s.input = r.input, s.hidden = r.hidden, s.dirs = r.dirs;
    s.reverse = direction_ == "reverse", s.batch_first = r.batch_first, s.peepholes = r.p != nullptr;
    if (!(s == lstm_shape_)) {  // a new shape: one try at a primitive for it
      lstm_shape_ = s;
      lstm_ = OnednnLstm::create(s);
      prepared_ = {};
    }
    return lstm_.get();
  }

  // Runs l on r's tensors into y, yh and yc; the weights are copied into oneDNN's layouts once while
  // the same constant tensors come in, else every run.
  void run_onednn_lstm(const RnnRun& r, OnednnLstm& l, std::vector<float>& y, std::vector<float>& yh,
                       std::vector<float>& yc) {
    LstmTensors t{r.x, r.w, r.r, r.b, r.p, r.h0, r.c0, y.data(), yh.data(), yc.data()};
    const std::vector<const float*> weights{r.w, r.r, r.b, r.p};
    if (!weights_constant_ || weights != prepared_) {
      l.prepare_weights(t);
      prepared_ = weights_constant_ ? weights : std::vector<const float*>{};
    }
    l.run(t);
  }

  // The thread team for r's recurrent weights, packed again when they are not the constant ones it
  // was made for (or the thread count changed).
  Result<const RecurrentTeam*> team_for(const RnnRun& r) {
    const int threads = std::max(1, omp_get_max_threads());
    if (!team_ || !weights_constant_ || team_r_ != r.r || team_threads_ != threads) {
      TeamCell cell;
      cell.kind = node_.op_type == "LSTM" ? CellKind::kLstm : node_.op_type == "GRU" ? CellKind::kGru : CellKind::kRnn;
      cell.clip = clip_, cell.input_forget = input_forget_, cell.linear_before_reset = linear_before_reset_;
      team_ = RecurrentTeam::make(cell, r.r, r.dirs, r.hidden, threads);
      if (!team_) return Status::error(ErrorCode::kOutOfRange, node_.label() + ": out of memory for the packed R");
      team_r_ = r.r;
      team_threads_ = threads;
    }
    return team_.get();
  }

  // xw[rows, GH] = X . W_d^T (its biases: fold_biases), W_d packed once while it is constant.
  Status project_inputs(const RnnRun& r, int64_t d, float* xw) {
    const int64_t GH = r.G * r.hidden, rows = r.seq * r.batch;
    if (rows == 0 || GH == 0) return Status();
    if (r.input == 0) {
      std::fill_n(xw, rows * GH, 0.0f);
      return Status();
    }
    if (projections_.size() < static_cast<size_t>(r.dirs)) projections_.resize(r.dirs);
    return projections_[d].run(r.x, rows, r.w + d * GH * r.input, GH, r.input, weights_constant_, xw);
  }

  // The biases direction d's gates add to X's projection: Wb_d + Rb_d, but for a GRU's hidden gate
  // Wb_d alone (its Rb is scaled by r, or added after the reset product).
  void fold_biases(const RnnRun& r, int64_t d, float* xb) const {
    const int64_t GH = r.G * r.hidden;
    const float* wb = r.b + d * 2 * GH;
    const float* rb = wb + GH;
    const int64_t fold = node_.op_type == "GRU" ? 2 * r.hidden : GH;
    for (int64_t k = 0; k < GH; ++k) xb[k] = wb[k] + (k < fold ? rb[k] : 0.0f);
  }

  // Output Y ([seq, dirs, batch, hidden], batch_first [batch, seq, dirs, hidden]) for the team to
  // write, or null when the run does not want it. Steps past a row's length stay zero, so with
  // sequence_lens shorter than the sequence it is zeroed first.
  Result<float*> sequence_output(ops::KernelContext& ctx, const RnnRun& r) const {
    if (!ctx.wants_output(0)) return static_cast<float*>(nullptr);
    const int64_t B = r.batch, S = r.seq, D = r.dirs, H = r.hidden;
    std::vector<int64_t> dims = r.batch_first ? std::vector<int64_t>{B, S, D, H} : std::vector<int64_t>{S, D, B, H};
    FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output_uninit(0, DType::kFloat32, dims));
    float* y = out->data<float>();
    if (std::any_of(r.lens.begin(), r.lens.end(), [&](int64_t len) { return len < S; })) std::fill_n(y, out->numel(), 0.0f);
    return y;
  }

  // oneDNN's LSTM results ([seq, dirs, batch, hidden] y) into the outputs.
  Status write_outputs(ops::KernelContext& ctx, const RnnRun& r, const std::vector<float>& y, const std::vector<float>& yh,
                       const std::vector<float>& yc) const {
    const int64_t H = r.hidden, B = r.batch, D = r.dirs, S = r.seq;
    FERRY_ASSIGN_OR_RETURN(float* o, sequence_output(ctx, r));
    if (o) {
      for (int64_t t = 0; t < S; ++t)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t bi = 0; bi < B; ++bi)
            std::copy_n(y.data() + ((t * D + d) * B + bi) * H, H,
                        o + (r.batch_first ? (bi * S + t) * D + d : (t * D + d) * B + bi) * H);
    }
    return write_states(ctx, r, yh, yc);
  }

  // The final states Y_h and (LSTM) Y_c, [dirs, batch, hidden] (batch_first [batch, dirs, hidden]).
  Status write_states(ops::KernelContext& ctx, const RnnRun& r, const std::vector<float>& yh,
                      const std::vector<float>& yc) const {
    const int64_t H = r.hidden, B = r.batch, D = r.dirs;
    auto state = [&](int i, const std::vector<float>& v) -> Status {
      if (!ctx.wants_output(i)) return Status();
      std::vector<int64_t> dims = r.batch_first ? std::vector<int64_t>{B, D, H} : std::vector<int64_t>{D, B, H};
      FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output_uninit(i, DType::kFloat32, dims));
      float* o = out->data<float>();
      for (int64_t d = 0; d < D; ++d)
        for (int64_t bi = 0; bi < B; ++bi)
          std::copy_n(v.data() + (d * B + bi) * H, H, o + (r.batch_first ? bi * D + d : d * B + bi) * H);
      return Status();
    };
    FERRY_RETURN_IF_ERROR(state(1, yh));
    if (node_.op_type == "LSTM") FERRY_RETURN_IF_ERROR(state(2, yc));
    return Status();
  }

  const ir::Node& node_;
  const Cell& cell_;
  std::string direction_;
  float clip_ = 0;
  bool input_forget_ = false, linear_before_reset_ = false;
  const ops::OpSchema* reference_ = nullptr;
  std::unique_ptr<RecurrentTeam> team_;
  const float* team_r_ = nullptr;  // the R team_ was packed from
  int team_threads_ = 0;
  LstmShape lstm_shape_;                 // the shape lstm_ was made for (or found no kernel for)
  std::unique_ptr<OnednnLstm> lstm_;
  std::vector<const float*> prepared_;  // the constant W, R, B, P lstm_'s weights were copied from
  bool used_onednn_ = false;
  bool weights_constant_ = true;  // W, R, B and P are initializers (or absent)
  std::vector<PackedLinear> projections_;  // per direction: X . W_d^T
};

Result<std::unique_ptr<Kernel>> create_rnn(const ir::Node& node, const CpuOptions&) {
  const Cell* cell = cell_of(node.op_type);
  if (!cell) return Status::unsupported("the cpu backend has no recurrent kernel for " + node.label());
  return std::unique_ptr<Kernel>(new RnnKernel(node, *cell));
}

}  // namespace

void register_rnn(KernelTable& t) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) t.push_back({"", op, rnn_supports, create_rnn});
}

}  // namespace ferry::backends::cpu
