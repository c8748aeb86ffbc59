// compare's metrics against values computed independently with NumPy (float64) in the project venv:
//   g = default_rng(42).standard_normal(12).astype(f32); c = g + 0.05 * noise; d = c - g (as float64)
//   cos = g@c/|g||c|, maxabs = max|d|, maxrel = max(|d| / maximum(|g|, 1e-7)), meanabs, rmse,
//   relE = |d|/|g|, snr = 10 log10(sum g^2 / sum d^2), np.allclose(c, g, atol, rtol)
// and for two batches of softmax rows p, q: kl = mean(sum(p log(p / q), -1)), top-1 / top-5 agreement.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/tensor.h"
#include "tools/compare/compare.h"
#include "tools/compare/metrics.h"

namespace ferry::tools::compare {
namespace {

const std::vector<float> kG = {0.304717094f, -1.03998411f, 0.750451207f, 0.940564692f, -1.95103514f, -1.30217946f,
                               0.1278404f,   -0.316242605f, -0.016801158f, -0.853043914f, 0.879397988f, 0.777791917f};
const std::vector<float> kC = {0.308018625f, -0.983622074f, 0.773826659f, 0.897600055f, -1.93259764f, -1.35012364f,
                               0.171762913f, -0.318738908f, -0.0260442756f, -0.887090385f, 0.940525055f, 0.770065427f};

TEST(CompareMetrics, MatchesNumPy) {
  Thresholds th;
  auto m = compute_metrics(Tensor::from_vector(kG, {3, 4}), Tensor::from_vector(kC, {3, 4}), th);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_NEAR(m->cosine, 0.99927467610995913, 1e-12);
  EXPECT_NEAR(m->max_abs, 0.061127066612243652, 1e-12);
  EXPECT_NEAR(m->max_rel, 0.55014765434305102, 1e-10);
  EXPECT_NEAR(m->mean_abs, 0.029245608951896429, 1e-12);
  EXPECT_NEAR(m->rmse, 0.035584137958916705, 1e-12);
  EXPECT_NEAR(m->rel_euclid, 0.038321103554241863, 1e-12);
  EXPECT_NEAR(m->snr_db, 28.33123985584858, 1e-9);
  EXPECT_FALSE(m->allclose);  // np.allclose(c, g, atol=1e-4, rtol=1e-3) is False
  EXPECT_TRUE(m->pass);       // cos 0.99927 >= 0.99 and relE 0.0383 <= 0.05
  EXPECT_FALSE(m->kl.has_value());  // not probabilities (negative values)
  th.atol = 0.2;
  th.rtol = 0;
  m = compute_metrics(Tensor::from_vector(kG, {3, 4}), Tensor::from_vector(kC, {3, 4}), th);
  EXPECT_TRUE(m->allclose);  // np.allclose(c, g, atol=0.2, rtol=0) is True
  th.rel_euclid_max = 0.03;  // now relE 0.0383 is too far
  m = compute_metrics(Tensor::from_vector(kG, {3, 4}), Tensor::from_vector(kC, {3, 4}), th);
  EXPECT_FALSE(m->pass);
}

TEST(CompareMetrics, KlAndTopKMatchNumPy) {
  const std::vector<float> p = {0.0863242447f, 0.0931587294f, 0.225596398f, 0.19092533f,  0.200170785f, 0.203824505f,
                                0.561359942f,  0.0439169183f, 0.0395067669f, 0.0292225871f, 0.122082137f, 0.203911677f,
                                0.118921936f,  0.0575272217f, 0.0584360808f, 0.255445093f, 0.280246317f, 0.229423359f};
  const std::vector<float> q = {0.0651003718f, 0.091966629f, 0.21512644f,  0.187721908f, 0.23938477f,  0.200699881f,
                                0.639858723f,  0.041670125f, 0.0400616266f, 0.0328364596f, 0.0733144954f, 0.172258571f,
                                0.0915948004f, 0.0421238355f, 0.0477228239f, 0.354783893f, 0.191701323f, 0.272073299f};
  auto m = compute_metrics(Tensor::from_vector(p, {3, 6}), Tensor::from_vector(q, {3, 6}), Thresholds{}, true);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->kl.has_value());
  EXPECT_NEAR(*m->kl, 0.024191187677115502, 1e-7);  // the float32 rows sum to 1 within rounding only
  ASSERT_TRUE(m->top1 && m->top5);
  EXPECT_NEAR(*m->top1, 1.0 / 3, 1e-12);
  EXPECT_NEAR(*m->top5, 1.0, 1e-12);
}

TEST(CompareMetrics, EdgeCases) {
  Thresholds th;
  auto zeros = Tensor::from_vector(std::vector<float>{0, 0, 0}, {3});
  auto m = compute_metrics(zeros, zeros, th);
  EXPECT_EQ(m->cosine, 1);
  EXPECT_EQ(m->rel_euclid, 0);
  EXPECT_TRUE(std::isinf(m->snr_db));
  EXPECT_TRUE(m->pass);
  auto ones = Tensor::from_vector(std::vector<float>{1, 1, 1}, {3});
  m = compute_metrics(zeros, ones, th);
  EXPECT_EQ(m->cosine, 0);
  EXPECT_FALSE(m->pass);
  // A new Inf in the candidate fails and is counted.
  const float inf = std::numeric_limits<float>::infinity();
  m = compute_metrics(ones, Tensor::from_vector(std::vector<float>{1, inf, 1}, {3}), th);
  EXPECT_EQ(m->candidate_inf, 1);
  EXPECT_FALSE(m->pass);
  EXPECT_FALSE(m->allclose);
  // The same -inf on both sides (an attention mask) is judged by the finite values.
  auto masked = Tensor::from_vector(std::vector<float>{1, -inf, 2}, {3});
  m = compute_metrics(masked, masked, th);
  EXPECT_TRUE(m->pass);
  // Shapes must agree; the error gives both.
  auto bad = compute_metrics(ones, Tensor::from_vector(std::vector<float>{1, 1}, {2}), th);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[3]"), std::string::npos);
  // Integer tensors compare as numbers.
  m = compute_metrics(Tensor::from_vector(std::vector<int64_t>{1, 2, 3}), Tensor::from_vector(std::vector<int64_t>{1, 2, 3}), th);
  EXPECT_TRUE(m->pass);
}

TEST(CompareRanges, Fp16Limits) {
  auto t = Tensor::from_vector(std::vector<float>{70000.f, -1.f, 1e-6f, 0.f, 2.f}, {5});
  auto r = range_of("t", t);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->absmax, 70000.0);
  EXPECT_EQ(r->min, -1.0);
  EXPECT_DOUBLE_EQ(r->fp16_overflow, 0.2);   // 1 of 5 values
  EXPECT_DOUBLE_EQ(r->fp16_underflow, 0.25);  // 1 of 4 non-zeros below 2^-14
  EXPECT_EQ(r->bf16_overflow, 0);
  EXPECT_FALSE(range_of("i", Tensor::from_vector(std::vector<int64_t>{1})));
}

}  // namespace
}  // namespace ferry::tools::compare
