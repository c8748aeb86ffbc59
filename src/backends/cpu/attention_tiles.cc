#include "backends/cpu/attention_tiles.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <unordered_map>

#include "backends/cpu/layout.h"
#include "backends/cpu/vec_softmax.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;

// A tile's scores: about this many bytes, so that they, K and V of one item stay in a core's L2.
constexpr int64_t kRowTileScoreBytes = int64_t{512} << 10;
constexpr int64_t kMinTileRows = 16, kMaxTileRows = 128;
// Items whose scores pass this go through tiles. Below it the batched primitives over groups of items
// measured faster (vit_b_16 and swin_t at batch 8, 197 and 49 tokens: 2-8% slower in tiles).
constexpr int64_t kMinItemScoreBytes = int64_t{1} << 20;

// Rows per tile: kRowTileScoreBytes of scores, a multiple of 16 in [16, 128], or a divisor of S within
// a quarter below that (no tail tile), or all of S when S is smaller.
int64_t tile_rows_for(int64_t S, int64_t T) {
  int64_t rows = kRowTileScoreBytes / (T * static_cast<int64_t>(sizeof(float))) / 16 * 16;
  rows = std::clamp(rows, kMinTileRows, kMaxTileRows);
  if (S <= rows) return S;
  for (int64_t r = rows; r * 4 >= rows * 3; --r)
    if (S % r == 0) return r;
  return rows;
}

bool is_nan_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x7fffffffu) > 0x7f800000u;
}

// A dense row-major fp32 [rows, cols].
md dense2(int64_t rows, int64_t cols) { return plain_desc(DType::kFloat32, {rows, cols}); }

}  // namespace

bool AttentionTiles::worth_it(int64_t S, int64_t T) {
  return S * T * static_cast<int64_t>(sizeof(float)) > kMinItemScoreBytes;
}

std::unique_ptr<AttentionTiles> AttentionTiles::make(int64_t items, int64_t S, int64_t T, int64_t D, int64_t Dv,
                                                     float scale, bool nan_to_zero) {
  std::unique_ptr<AttentionTiles> a(new AttentionTiles());
  a->items_ = items;
  a->S_ = S;
  a->T_ = T;
  a->D_ = D;
  a->Dv_ = Dv;
  a->nan_to_zero_ = nan_to_zero;
  a->rows_ = tile_rows_for(S, T);
  // Kᵀ: [D, T] over K's [T, D] bytes; V as it is.
  a->kt_plain_ = md({D, T}, dt::f32, dnnl::memory::dims{1, D});
  a->v_plain_ = dense2(T, Dv);
  try {
    a->block_ = a->make_stage(a->rows_, scale);
    if (S % a->rows_ != 0) a->tail_ = a->make_stage(S % a->rows_, scale);
    // On the threads' own scratchpads like the matmuls (the library's is not for concurrent use).
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    for (auto [from, to, prim] : {std::tuple{&a->kt_plain_, &a->kt_blocked_, &a->k_reorder_},
                                  std::tuple{&a->v_plain_, &a->v_blocked_, &a->v_reorder_}}) {
      dnnl::reorder::primitive_desc pd(engine(), *from, engine(), *to, attr);
      a->scratchpad_bytes_ = std::max(a->scratchpad_bytes_, pd.scratchpad_desc().get_size());
      *prim = dnnl::reorder(pd);
    }
  } catch (const dnnl::error&) {
    return nullptr;  // no such primitive (or only the reference matmul): the batched path runs it
  }
  return a;
}

// The first stage made picks the blocked weight layouts (format `any`); the tail's matmuls take the same.
AttentionTiles::Stage AttentionTiles::make_stage(int64_t rows, float scale) {
  Stage st;
  st.rows = rows;
  const bool first = !block_.qk;
  const md kt_w = first ? md({D_, T_}, dt::f32, dnnl::memory::format_tag::any) : kt_blocked_;
  const md v_w = first ? md({T_, Dv_}, dt::f32, dnnl::memory::format_tag::any) : v_blocked_;
  dnnl::primitive_attr qk_attr, pv_attr;
  qk_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  pv_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (scale != 1.f) qk_attr.set_output_scales(0, {scale});
  dnnl::matmul::primitive_desc qk(dnnl::matmul::desc(dense2(rows, D_), kt_w, dense2(rows, T_)), qk_attr, engine());
  dnnl::matmul::primitive_desc pv(dnnl::matmul::desc(dense2(rows, T_), v_w, dense2(rows, Dv_)), pv_attr, engine());
  if (is_reference_impl(qk) || is_reference_impl(pv)) throw dnnl::error(dnnl_unimplemented, "reference matmul");
  if (first) {
    kt_blocked_ = qk.weights_desc();
    v_blocked_ = pv.weights_desc();
  }
  scratchpad_bytes_ = std::max({scratchpad_bytes_, qk.scratchpad_desc().get_size(), pv.scratchpad_desc().get_size()});
  st.qk = dnnl::matmul(qk);
  st.pv = dnnl::matmul(pv);
  return st;
}

AttentionTiles::ThreadState& AttentionTiles::state_of(int thread) {
  auto& ts = threads_[thread];
  if (!ts) {
    ts = std::make_unique<ThreadState>();
    ts->scores.resize(rows_ * T_);
    ts->k_blocked.resize(kt_blocked_.get_size() / sizeof(float) + 1);
    ts->v_blocked.resize(v_blocked_.get_size() / sizeof(float) + 1);
    ts->inv_sum.resize(rows_);
  }
  return *ts;
}

Status AttentionTiles::run(const float* q, const float* k, const float* v, float* y) {
  const int threads = std::max(1, omp_get_max_threads());
  if (static_cast<int>(threads_.size()) < threads) threads_.resize(threads);
  for (int t = 0; t < threads; ++t) {
    state_of(t).item = -1;  // K and V are this run's
  }
  streams_.reserve(threads, scratchpad_bytes_);
  const int64_t tiles = (S_ + rows_ - 1) / rows_, tasks = items_ * tiles;
  return run_on_threads(threads, "FusedAttention (row tiles)", [&](int t, int nt) {
    ThreadState& ts = *threads_[t];
    dnnl::stream& stream = streams_.stream(t);
    // Contiguous tasks, item-major: a thread moves to a new item (and reorders its K and V) rarely.
    for (int64_t task = tasks * t / nt; task < tasks * (t + 1) / nt; ++task) {
      const int64_t item = task / tiles, row = (task % tiles) * rows_;
      if (item != ts.item) {
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_FROM, dnnl::memory(kt_plain_, engine(), const_cast<float*>(k + item * T_ * D_))},
            {DNNL_ARG_TO, dnnl::memory(kt_blocked_, engine(), ts.k_blocked.data())}};
        streams_.add_scratchpad(t, args);
        k_reorder_.execute(stream, args);
        args[DNNL_ARG_FROM] = dnnl::memory(v_plain_, engine(), const_cast<float*>(v + item * T_ * Dv_));
        args[DNNL_ARG_TO] = dnnl::memory(v_blocked_, engine(), ts.v_blocked.data());
        v_reorder_.execute(stream, args);
        stream.wait();
        ts.item = item;
      }
      const Stage& st = S_ - row >= rows_ ? block_ : tail_;
      run_tile(t, st, q + (item * S_ + row) * D_, y + (item * S_ + row) * Dv_);
    }
  });
}

void AttentionTiles::run_tile(int thread, const Stage& st, const float* q, float* y) {
  ThreadState& ts = *threads_[thread];
  dnnl::stream& stream = streams_.stream(thread);
  const int64_t rows = st.rows;
  dnnl::memory scores(dense2(rows, T_), engine(), ts.scores.data());
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(dense2(rows, D_), engine(), const_cast<float*>(q))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(kt_blocked_, engine(), ts.k_blocked.data())},
      {DNNL_ARG_DST, scores}};
  streams_.add_scratchpad(thread, args);
  st.qk.execute(stream, args);
  stream.wait();
  for (int64_t r = 0; r < rows; ++r) {
    const float sum = vec_exp_minus_max(ts.scores.data() + r * T_, static_cast<size_t>(T_));
    // A row with a NaN (or +inf) score sums to NaN; nan_to_zero makes its output 0 as the unfused
    // graph's Where(IsNaN(P), 0, P) does, and without it the NaN spreads over the row as it would.
    ts.inv_sum[r] = nan_to_zero_ && is_nan_bits(sum) ? 0.f : 1.f / sum;
  }
  args[DNNL_ARG_SRC] = scores;
  args[DNNL_ARG_WEIGHTS] = dnnl::memory(v_blocked_, engine(), ts.v_blocked.data());
  args[DNNL_ARG_DST] = dnnl::memory(dense2(rows, Dv_), engine(), y);
  st.pv.execute(stream, args);
  stream.wait();
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * Dv_;
    const float inv = ts.inv_sum[r];
    if (inv == 0.f) {
      std::fill(yr, yr + Dv_, 0.f);  // NaN * 0 would stay NaN
      continue;
    }
    for (int64_t j = 0; j < Dv_; ++j) yr[j] *= inv;
  }
}

}  // namespace ferry::backends::cpu
