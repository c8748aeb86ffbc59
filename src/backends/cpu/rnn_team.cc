#include "backends/cpu/rnn_team.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "backends/cpu/vec_rnn.h"

namespace ferry::backends::cpu {

namespace {

constexpr int64_t kPanel = 16;  // columns of a vec_step_gemm panel

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeDeleter>;

AlignedFloats aligned_floats(int64_t n) {
  const size_t bytes = (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float) + 63) / 64 * 64;
  return AlignedFloats(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

// R's rows `rows` (one per packed column) as panels of kPanel columns: panel p holds k-major rows of
// kPanel floats, column c being R's row rows[16p + c]; the missing columns of the last panel are zero.
AlignedFloats pack_rows(const float* r, int64_t hidden, const std::vector<int64_t>& rows, int64_t panels) {
  AlignedFloats out = aligned_floats(panels * hidden * kPanel);
  if (!out) return out;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t k = 0; k < hidden; ++k) {
      float* dst = out.get() + (p * hidden + k) * kPanel;
      for (int64_t c = 0; c < kPanel; ++c) {
        const int64_t col = p * kPanel + c;
        dst[c] = col < static_cast<int64_t>(rows.size()) ? r[rows[col] * hidden + k] : 0.0f;
      }
    }
  return out;
}

}  // namespace

struct RecurrentTeam::Member {
  int thread = 0;
  int64_t dir = 0, u0 = 0, n = 0;  // hidden units [u0, u0 + n) of direction dir
  int64_t gates_a = 0;             // gates in the first product: all but a GRU's hidden gate
  int64_t panels_a = 0, panels_b = 0;
  AlignedFloats pack_a, pack_b;  // pack_b: the GRU hidden gate's rows
};

struct RecurrentTeam::Scratch {
  std::vector<float> c_a, c_b, gates, hr, peep;
};

RecurrentTeam::~RecurrentTeam() = default;

std::unique_ptr<RecurrentTeam> RecurrentTeam::make(const TeamCell& cell, const float* r, int64_t dirs, int64_t hidden,
                                                   int threads) {
  std::unique_ptr<RecurrentTeam> team(new RecurrentTeam());
  team->cell_ = cell;
  team->hidden_ = hidden;
  team->dirs_ = dirs;
  const int64_t H = hidden, G = cell.gates();
  // Threads per direction: at least one panel's worth of units each. With fewer threads than
  // directions one thread runs both, step by step.
  const int64_t per_dir = threads >= dirs ? std::clamp<int64_t>(threads / dirs, 1, std::max<int64_t>(1, (H + 15) / 16)) : 1;
  team->threads_ = threads >= dirs ? static_cast<int>(per_dir * dirs) : 1;
  const int64_t block = std::max<int64_t>(1, ((H + per_dir - 1) / per_dir + kPanel - 1) / kPanel * kPanel);
  const bool gru = cell.kind == CellKind::kGru;
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t m = 0; m < per_dir; ++m) {
      Member mem;
      mem.thread = team->threads_ == 1 ? 0 : static_cast<int>(m * dirs + d);
      mem.dir = d;
      mem.u0 = std::min(H, m * block);
      mem.n = std::min(H, mem.u0 + block) - mem.u0;
      mem.gates_a = gru ? 2 : G;
      if (mem.n > 0) {
        const float* rd = r + d * G * H * H;
        std::vector<int64_t> rows;
        for (int64_t g = 0; g < mem.gates_a; ++g)
          for (int64_t j = 0; j < mem.n; ++j) rows.push_back(g * H + mem.u0 + j);
        mem.panels_a = (static_cast<int64_t>(rows.size()) + kPanel - 1) / kPanel;
        mem.pack_a = pack_rows(rd, H, rows, mem.panels_a);
        if (!mem.pack_a) return nullptr;
        if (gru) {
          rows.clear();
          for (int64_t j = 0; j < mem.n; ++j) rows.push_back(2 * H + mem.u0 + j);
          mem.panels_b = (mem.n + kPanel - 1) / kPanel;
          mem.pack_b = pack_rows(rd, H, rows, mem.panels_b);
          if (!mem.pack_b) return nullptr;
        }
      }
      team->members_.push_back(std::move(mem));
    }
  return team;
}

void RecurrentTeam::run(const TeamRun& run) const {
  const int64_t H = hidden_, B = run.batch, D = dirs_;
  // Per direction: the hidden state twice (step s reads half s % 2 and writes the other), the cell
  // state, and a GRU's r * h when the hidden gate multiplies it (linear_before_reset 0).
  std::vector<std::vector<float>> h(D, std::vector<float>(2 * B * H, 0.0f)), c(D, std::vector<float>(B * H, 0.0f)), rh(D);
  const bool two_phase = cell_.kind == CellKind::kGru && !cell_.linear_before_reset;
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t offset = (run.batch_first ? b * D + d : d * B + b) * H;
      if (run.h0) std::copy_n(run.h0 + offset, H, h[d].data() + b * H);
      if (run.c0) std::copy_n(run.c0 + offset, H, c[d].data() + b * H);
    }
    if (two_phase) rh[d].assign(B * H, 0.0f);
  }
#pragma omp parallel num_threads(threads_) if (threads_ > 1)
  {
    const int tid = omp_get_thread_num();
    std::vector<const Member*> mine;
    for (const Member& m : members_)
      if (m.thread == tid && m.n > 0) mine.push_back(&m);
    std::vector<Scratch> scratch(mine.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      const Member& m = *mine[i];
      Scratch& s = scratch[i];
      s.c_a.resize(B * m.panels_a * kPanel);
      s.c_b.resize(B * m.panels_b * kPanel);
      s.gates.resize(B * cell_.gates() * m.n);
      s.hr.resize(B * m.n);
      if (run.p) {  // the member's peepholes [i, o, f], each n units
        const float* pd = run.p + m.dir * 3 * H + m.u0;
        for (int64_t g = 0; g < 3; ++g) s.peep.insert(s.peep.end(), pd + g * H, pd + g * H + m.n);
      }
    }
    for (int64_t s = 0; s < run.seq; ++s) {
      for (size_t i = 0; i < mine.size(); ++i) first_phase(*mine[i], scratch[i], run, s, h, rh);
      if (two_phase) {
#pragma omp barrier
      }
      for (size_t i = 0; i < mine.size(); ++i) update_cells(*mine[i], scratch[i], run, s, h, c, rh);
#pragma omp barrier
    }
  }
  for (int64_t d = 0; d < D; ++d) {
    const float* last = h[d].data() + (run.seq % 2) * B * H;
    std::copy_n(last, B * H, run.yh + d * B * H);
    if (run.yc) std::copy_n(c[d].data(), B * H, run.yc + d * B * H);
  }
}

// Step s up to the cells: the gates' pre-activations of the member's units for every batch row (X's
// projection plus h . R), and for a GRU the hidden gate's recurrent term (linear_before_reset) or
// r * h, which the second phase multiplies by R_h once every unit's r is known.
void RecurrentTeam::first_phase(const Member& m, Scratch& sc, const TeamRun& run, int64_t s,
                                std::vector<std::vector<float>>& h, std::vector<std::vector<float>>& rh) const {
  const int64_t H = hidden_, B = run.batch, G = cell_.gates(), GH = G * H, n = m.n, u0 = m.u0;
  const int64_t t = time_of(run, m.dir, s);
  const float* hc = h[m.dir].data() + (s % 2) * B * H;
  const float* xw = run.xw + m.dir * run.seq * B * GH;
  const float* xb = run.xb + m.dir * GH + u0;
  const int64_t lda = m.panels_a * kPanel;
  vec_step_gemm(hc, H, B, H, m.pack_a.get(), H, m.panels_a, sc.c_a.data(), lda, false);
  for (int64_t b = 0; b < B; ++b) {
    const float* x = xw + (run.batch_first ? b * run.seq + t : t * B + b) * GH + u0;
    const float* ca = sc.c_a.data() + b * lda;
    float* g = sc.gates.data() + b * G * n;
    for (int64_t gi = 0; gi < m.gates_a; ++gi)
      for (int64_t j = 0; j < n; ++j) g[gi * n + j] = ca[gi * n + j] + x[gi * H + j] + xb[gi * H + j];
    if (cell_.kind == CellKind::kGru)
      for (int64_t j = 0; j < n; ++j) g[2 * n + j] = x[2 * H + j] + xb[2 * H + j];
  }
  if (cell_.kind != CellKind::kGru) return;
  const float* rb_h = hidden_gate_bias(run, m);
  if (cell_.linear_before_reset) {
    const int64_t ldb = m.panels_b * kPanel;
    vec_step_gemm(hc, H, B, H, m.pack_b.get(), H, m.panels_b, sc.c_b.data(), ldb, false);
    for (int64_t b = 0; b < B; ++b)
      vec_gru_reset(sc.gates.data() + b * G * n + n, sc.c_b.data() + b * ldb, rb_h, n, cell_.clip, sc.hr.data() + b * n);
  } else {
    for (int64_t b = 0; b < B; ++b)
      vec_gru_reset(sc.gates.data() + b * G * n + n, hc + b * H + u0, nullptr, n, cell_.clip,
                    rh[m.dir].data() + b * H + u0);
  }
}

// Step s's cells for the member's units: the new hidden (and cell) state, and the outputs of the
// batch rows still within their lengths; the others keep their state.
void RecurrentTeam::update_cells(const Member& m, Scratch& sc, const TeamRun& run, int64_t s,
                                 std::vector<std::vector<float>>& h, std::vector<std::vector<float>>& c,
                                 std::vector<std::vector<float>>& rh) const {
  const int64_t H = hidden_, B = run.batch, G = cell_.gates(), n = m.n, u0 = m.u0, d = m.dir;
  const int64_t t = time_of(run, d, s);
  if (cell_.kind == CellKind::kGru && !cell_.linear_before_reset) {
    const int64_t ldb = m.panels_b * kPanel;
    const float* rb_h = hidden_gate_bias(run, m);
    vec_step_gemm(rh[d].data(), H, B, H, m.pack_b.get(), H, m.panels_b, sc.c_b.data(), ldb, false);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < n; ++j) sc.hr[b * n + j] = sc.c_b[b * ldb + j] + (rb_h ? rb_h[j] : 0.0f);
  }
  const float* hc = h[d].data() + (s % 2) * B * H;
  float* hn = h[d].data() + ((s + 1) % 2) * B * H;
  for (int64_t b = 0; b < B; ++b) {
    float* hb = hn + b * H + u0;
    std::copy_n(hc + b * H + u0, n, hb);
    if (t >= run.lens[b]) continue;
    const float* g = sc.gates.data() + b * G * n;
    switch (cell_.kind) {
      case CellKind::kLstm:
        vec_lstm_cell(g, run.p ? sc.peep.data() : nullptr, n, cell_.clip, cell_.input_forget, hb, c[d].data() + b * H + u0);
        break;
      case CellKind::kGru:
        vec_gru_cell(g, sc.hr.data() + b * n, n, cell_.clip, hb);
        break;
      case CellKind::kRnn:
        vec_rnn_cell(g, n, cell_.clip, hb);
        break;
    }
    if (run.y) {
      const int64_t row = run.batch_first ? (b * run.seq + t) * dirs_ + d : (t * dirs_ + d) * B + b;
      std::copy_n(hb, n, run.y + row * H + u0);
    }
  }
}

int64_t RecurrentTeam::time_of(const TeamRun& run, int64_t dir, int64_t s) {
  return run.reverse || dir == 1 ? run.seq - 1 - s : s;
}

const float* RecurrentTeam::hidden_gate_bias(const TeamRun& run, const Member& m) const {
  const int64_t GH = cell_.gates() * hidden_;
  return run.rb ? run.rb + m.dir * 2 * GH + GH + 2 * hidden_ + m.u0 : nullptr;
}

}  // namespace ferry::backends::cpu
