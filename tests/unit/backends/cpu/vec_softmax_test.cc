// The strided Softmax / LogSoftmax kernel (vec_softmax.h) against a double-precision loop, under every
// Highway target this CPU runs (AVX-512, AVX2, SSE4, ...), each forced in turn.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>

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

}  // namespace
}  // namespace ferry::backends::cpu::testing
