// FusedAttention for a few query rows (a decoder's step: one new token against its KV cache, or against
// an encoder's 1500 positions), fp32, one query row at a time on the calling thread: the scores of every
// key, then the probabilities' weighted sum of V's rows. Each K and V row is read once, straight from the
// inputs; the batched path's three oneDNN primitives (a matmul, the softmax, a matmul) are built for many
// rows and ran whisper's decoder step at batch 8 at 8 GFLOP/s, bound by nothing but their overheads.
// Compiled per x86 ISA with Highway, picked at run time.
#pragma once
#include <cstdint>

namespace ferry::backends::cpu {

// scores[j] = scale * (q . k[j]) for j < T, k holding T rows of D floats (dense).
void vec_attention_scores(const float* q, const float* k, int64_t T, int64_t D, float scale, float* scores);
// y = (sum_j p[j] * v[j]) * inv for j < T, v holding T rows of Dv floats (dense).
void vec_attention_weighted_sum(const float* p, const float* v, int64_t T, int64_t Dv, float inv, float* y);

}  // namespace ferry::backends::cpu
