// The few-rows attention's vector kernels (vec_attention.h) against double loops, under every Highway
// target this CPU runs (AVX-512, AVX2, SSE4, ...), each forced in turn: head sizes that fill whole
// vectors, leave a partial last one, or (V) take more than one chunk of four vectors; key counts around
// the four-key groups of the scores.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "unit/backends/cpu/conv_test_util.h"
#include "unit/backends/cpu/hwy_targets_util.h"

#include "backends/cpu/vec_attention.h"

namespace ferry::backends::cpu::testing {
namespace {

TEST(VecAttention, ScoresAndWeightedSumMatchALoopOnEveryTarget) {
  for_every_hwy_target([] {
    for (int64_t T : {1, 3, 4, 9})
      for (int64_t D : {1, 7, 16, 20, 64, 150}) {
        const std::string what = "T " + std::to_string(T) + " D " + std::to_string(D);
        Tensor q = random_tensor({D}, 1), k = random_tensor({T, D}, 2), p = random_tensor({T}, 3);
        // One float past each buffer's end: a kernel that reads or writes past D shows up here.
        std::vector<float> scores(T + 1, 42.f), y(D + 1, 42.f);
        vec_attention_scores(q.data<float>(), k.data<float>(), T, D, 0.5f, scores.data());
        vec_attention_weighted_sum(p.data<float>(), k.data<float>(), T, D, 0.25f, y.data());
        for (int64_t j = 0; j < T; ++j) {
          double want = 0;
          for (int64_t c = 0; c < D; ++c) want += double(q.data<float>()[c]) * k.data<float>()[j * D + c];
          ASSERT_NEAR(scores[j], 0.5 * want, 1e-5 * (1 + std::abs(want))) << what << " key " << j;
        }
        for (int64_t c = 0; c < D; ++c) {
          double want = 0;
          for (int64_t j = 0; j < T; ++j) want += double(p.data<float>()[j]) * k.data<float>()[j * D + c];
          ASSERT_NEAR(y[c], 0.25 * want, 1e-5 * (1 + std::abs(want))) << what << " column " << c;
        }
        EXPECT_EQ(scores[T], 42.f) << what;
        EXPECT_EQ(y[D], 42.f) << what;
      }
  });
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
