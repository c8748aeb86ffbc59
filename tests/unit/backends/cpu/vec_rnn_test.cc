// The recurrent cells' vector kernels (vec_rnn.h) against double-precision loops of the ONNX formulas,
// under every Highway target this CPU runs (AVX-512, AVX2, SSE4, ...), each forced in turn, at hidden
// sizes that fill whole vectors and ones that leave a partial last vector.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "unit/backends/cpu/conv_test_util.h"
#include "unit/backends/cpu/hwy_targets_util.h"

#include "backends/cpu/vec_rnn.h"

namespace ferry::backends::cpu::testing {
namespace {

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clip_to(double v, float clip) { return clip > 0 ? std::max<double>(-clip, std::min<double>(clip, v)) : v; }

std::vector<float> values(int64_t n, uint32_t seed, float scale) {
  Tensor t = random_tensor({n}, seed);
  std::vector<float> v(t.data<float>(), t.data<float>() + n);
  for (float& x : v) x *= scale;
  return v;
}

template <class Check>
void on_every_target(Check check) {
  for_every_hwy_target([&] {
    for (int64_t hidden : {5, 16, 37})
      for (float clip : {0.f, 1.5f}) check(hidden, clip);
  });
}

TEST(VecRnn, LstmCellMatchesTheFormulaOnEveryTarget) {
  on_every_target([](int64_t H, float clip) {
    for (bool peep : {false, true})
      for (bool input_forget : {false, true}) {
        const std::vector<float> g = values(4 * H, 1, 3.f), p = values(3 * H, 2, 1.f), h0 = values(H, 3, 1.f),
                                 c0 = values(H, 4, 2.f);
        std::vector<float> h = h0, c = c0;
        vec_lstm_cell(g.data(), peep ? p.data() : nullptr, H, clip, input_forget, h.data(), c.data());
        for (int64_t k = 0; k < H; ++k) {  // gates [i, o, f, c], peepholes [i, o, f]
          const double i = sig(clip_to(g[k] + (peep ? p[k] * c0[k] : 0), clip));
          const double f = input_forget ? 1 - i : sig(clip_to(g[2 * H + k] + (peep ? p[2 * H + k] * c0[k] : 0), clip));
          const double cn = f * c0[k] + i * std::tanh(clip_to(g[3 * H + k], clip));
          const double o = sig(clip_to(g[H + k] + (peep ? p[H + k] * cn : 0), clip));
          ASSERT_NEAR(c[k], cn, 2e-6 * std::max(1.0, std::abs(cn))) << "hidden " << H << " unit " << k;
          ASSERT_NEAR(h[k], o * std::tanh(cn), 2e-6) << "hidden " << H << " unit " << k;
        }
      }
  });
}

TEST(VecRnn, GruCellAndResetMatchTheFormulaOnEveryTarget) {
  on_every_target([](int64_t H, float clip) {
    const std::vector<float> g = values(3 * H, 5, 3.f), x = values(H, 6, 2.f), b = values(H, 7, 1.f),
                             h0 = values(H, 8, 1.f);
    for (bool bias : {false, true}) {  // r * (x + b): linear_before_reset's term, or r * h without b
      std::vector<float> out(H);
      vec_gru_reset(g.data() + H, x.data(), bias ? b.data() : nullptr, H, clip, out.data());
      for (int64_t k = 0; k < H; ++k) {
        const double want = sig(clip_to(g[H + k], clip)) * (x[k] + (bias ? b[k] : 0.0));
        ASSERT_NEAR(out[k], want, 2e-6 * std::max(1.0, std::abs(want))) << "hidden " << H << " unit " << k;
      }
    }
    std::vector<float> h = h0;  // gates [z, r, h]; hr is the hidden gate's recurrent term
    vec_gru_cell(g.data(), x.data(), H, clip, h.data());
    for (int64_t k = 0; k < H; ++k) {
      const double z = sig(clip_to(g[k], clip)), hh = std::tanh(clip_to(double(g[2 * H + k]) + x[k], clip));
      ASSERT_NEAR(h[k], (1 - z) * hh + z * h0[k], 2e-6) << "hidden " << H << " unit " << k;
    }
  });
}

TEST(VecRnn, RnnCellMatchesTheFormulaOnEveryTarget) {
  on_every_target([](int64_t H, float clip) {
    const std::vector<float> g = values(H, 9, 3.f);
    std::vector<float> h(H);
    vec_rnn_cell(g.data(), H, clip, h.data());
    for (int64_t k = 0; k < H; ++k) ASSERT_NEAR(h[k], std::tanh(clip_to(g[k], clip)), 2e-6) << "unit " << k;
  });
}

// The recurrent step's product (C = A . P over 16-column panels, rnn_team.cc's packing) against a
// double loop: row counts around the register tiles (8 on AVX-512, 6 on AVX2), odd panel counts (a
// tile of one panel after the pairs), accumulation into C, and panels longer than the product's K
// (the packed GEMM's K slices: each panel's first K rows are read).
TEST(VecRnn, StepGemmMatchesALoopOnEveryTarget) {
  for_every_hwy_target([] {
    for (int64_t rows : {1, 5, 8, 9, 13})
      for (int64_t K : {1, 6, 37})
        for (int64_t panels : {1, 2, 3})
          for (bool accumulate : {false, true}) {
            const int64_t lda = K + 3, ldc = panels * 16 + 5, panel_rows = K + (accumulate ? 4 : 0);
            Tensor a = random_tensor({rows, lda}, 11), p = random_tensor({panels, panel_rows, 16}, 12);
            Tensor c0 = random_tensor({rows, ldc}, 13);
            std::vector<float> c(c0.data<float>(), c0.data<float>() + rows * ldc);
            vec_step_gemm(a.data<float>(), lda, rows, K, p.data<float>(), panel_rows, panels, c.data(), ldc, accumulate);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t col = 0; col < ldc; ++col) {
                const float before = c0.data<float>()[r * ldc + col];
                if (col >= panels * 16) {
                  ASSERT_EQ(c[r * ldc + col], before) << "wrote past the panels at " << r << "," << col;
                  continue;
                }
                double want = accumulate ? before : 0.0;
                for (int64_t k = 0; k < K; ++k)
                  want += double(a.data<float>()[r * lda + k]) *
                          p.data<float>()[((col / 16) * panel_rows + k) * 16 + col % 16];
                ASSERT_NEAR(c[r * ldc + col], want, 1e-5 * (1 + std::abs(want)))
                    << "rows " << rows << " K " << K << " panels " << panels << " at " << r << "," << col;
              }
          }
  });
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
