// The strided Softmax / LogSoftmax kernel (vec_softmax.h) against a double-precision loop, under every
// Highway target this CPU runs (AVX-512, AVX2, SSE4, ...), each forced in turn.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <limits>
#include <vector>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/vec_softmax.h"

namespace ferry::backends::cpu::testing {
namespace {

TEST(VecSoftmax, MatchesADoubleLoopOnEveryTarget) {
  struct Case {
    int64_t outer, axis, inner;
  };
  int targets = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    ++targets;
    SCOPED_TRACE(hwy::TargetName(target));
    for (Case c : {Case{1, 16, 67}, Case{3, 5, 1000}, Case{2, 1, 9}, Case{1, 80, 3}}) {
      Tensor x = random_tensor({c.outer, c.axis, c.inner}, 3);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 20.f;  // a wide range: exp must not overflow
      for (bool log : {false, true}) {
        Tensor y(DType::kFloat32, x.dims());
        vec_softmax_strided(x.data<float>(), y.data<float>(), c.outer, c.axis, c.inner, log);
        for (int64_t o = 0; o < c.outer; ++o)
          for (int64_t j = 0; j < c.inner; ++j) {
            const float* px = x.data<float>() + o * c.axis * c.inner + j;
            const float* py = y.data<float>() + o * c.axis * c.inner + j;
            double m = -INFINITY, s = 0;
            for (int64_t a = 0; a < c.axis; ++a) m = std::max(m, double(px[a * c.inner]));
            for (int64_t a = 0; a < c.axis; ++a) s += std::exp(px[a * c.inner] - m);
            for (int64_t a = 0; a < c.axis; ++a) {
              const double want = log ? px[a * c.inner] - m - std::log(s) : std::exp(px[a * c.inner] - m) / s;
              ASSERT_NEAR(py[a * c.inner], want, 2e-6 * std::max(1.0, std::abs(want)))
                  << c.outer << "x" << c.axis << "x" << c.inner << (log ? " log" : "") << " at " << o << "," << a << "," << j;
            }
          }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets, 2);
}

// vec_exp_minus_max (FusedAttention's row tiles) on every target: exp(x - max) and its sum against
// doubles, for rows shorter than a vector, not a whole number of vectors, with values far enough below
// the max to underflow to 0 (-1e4, -3e38, -inf); and a NaN anywhere, or a max of +-inf, gives a NaN
// row and a NaN sum.
TEST(VecSoftmax, ExpMinusMaxOnEveryTarget) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (int64_t n : {1, 7, 16, 37, 1500}) {
      Tensor x = random_tensor({n}, 5);
      float* p = x.data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] *= 30.f;
      if (n > 3) p[1] = -1e4f, p[2] = -3e38f, p[3] = -inf;
      std::vector<float> y(p, p + n);
      const float sum = vec_exp_minus_max(y.data(), static_cast<size_t>(n));
      double m = -INFINITY, want_sum = 0;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, double(p[i]));
      for (int64_t i = 0; i < n; ++i) {
        const double want = std::exp(double(p[i]) - m);
        want_sum += want;
        ASSERT_NEAR(y[i], want, 2e-6 * std::max(1.0, want)) << "n " << n << " at " << i;
      }
      EXPECT_NEAR(sum, want_sum, 2e-6 * want_sum) << "n " << n;
      for (int64_t bad : {0, 1, 2}) {
        for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
          std::vector<float> z(p, p + n);
          z[at] = bad == 0 ? std::numeric_limits<float>::quiet_NaN() : bad == 1 ? inf : -inf;
          if (bad == 2) std::fill(z.begin(), z.end(), -inf);  // every value -inf: max - max is NaN
          EXPECT_TRUE(std::isnan(vec_exp_minus_max(z.data(), static_cast<size_t>(n)))) << "n " << n << " bad " << bad;
          for (float v : z) ASSERT_TRUE(std::isnan(v)) << "n " << n << " bad " << bad;
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
