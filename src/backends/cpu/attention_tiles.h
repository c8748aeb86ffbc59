// FusedAttention for long unmasked fp32 sequences, one row tile per thread: each OpenMP thread takes a
// contiguous range of (batch item, tile of query rows) tasks and runs the scores matmul, the softmax and
// the matmul with V for its tile alone, on its own oneDNN stream and scratchpad (oneDNN runs a primitive
// single-threaded inside a parallel region). A tile's scores stay in the thread's cache, no barrier sits
// between the three steps, and K and V are reordered into the matmuls' blocked weight layout once per
// item and thread instead of being packed again by every call.
//
// The softmax is ours: exp(s - max) in place and the row sum (vec_exp_minus_max); the division moves to
// the output rows, Dv values each instead of T. whisper's encoder at batch 8 ([48, 1500, 1500] scores):
// 181 -> 122 ms for one attention on 2 threads (Intel Xeon with AMX), where the batched primitives over
// blocks of rows ran their matmuls at 180-215 GFLOP/s (each call re-packing K or V) with a barrier after
// every step. Items of 1 MB of scores or less stay on the batched path: vit_b_16 and swin_t at batch 8
// (197 and 49 tokens) measured 2-8% slower in tiles.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/thread_streams.h"

namespace ferry::backends::cpu {

class AttentionTiles {
 public:
  // Y[i] = softmax(scale * Q[i] K[i]ᵀ) V[i] for `items` dense items of Q [S, D], K [T, D], V [T, Dv] and
  // Y [S, Dv]. Null where oneDNN has no non-reference matmul for these shapes.
  static std::unique_ptr<AttentionTiles> make(int64_t items, int64_t S, int64_t T, int64_t D, int64_t Dv,
                                              float scale, bool nan_to_zero);
  // Whether attention of this size goes through tiles: an item's fp32 scores [S, T] beyond 1 MB.
  static bool worth_it(int64_t S, int64_t T);

  // An error where oneDNN throws on a thread.
  Status run(const float* q, const float* k, const float* v, float* y);

 private:
  struct Stage {  // the primitives for a tile of `rows` query rows
    int64_t rows = 0;
    dnnl::matmul qk, pv;
  };
  struct ThreadState {
    std::vector<float> scores, k_blocked, v_blocked, inv_sum;
    int64_t item = -1;  // whose K and V the blocked buffers hold
  };
  AttentionTiles() = default;
  Stage make_stage(int64_t rows, float scale);
  void run_tile(int thread, const Stage& st, const float* q, float* y);
  ThreadState& state_of(int thread);

  int64_t items_ = 0, S_ = 0, T_ = 0, D_ = 0, Dv_ = 0, rows_ = 0;
  bool nan_to_zero_ = false;
  dnnl::memory::desc kt_plain_, v_plain_, kt_blocked_, v_blocked_;
  dnnl::reorder k_reorder_, v_reorder_;
  Stage block_, tail_;
  size_t scratchpad_bytes_ = 0;
  std::vector<std::unique_ptr<ThreadState>> threads_;
  ThreadStreams streams_;  // each thread's oneDNN stream and scratchpad
};

}  // namespace ferry::backends::cpu
