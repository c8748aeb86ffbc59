// The quantile sketch evaluate aggregates with: quantiles within its relative accuracy of the exact ones,
// merging in any split and order gives the same sketch, and the JSON form round-trips and rejects
// tampered counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tools/evaluate/sketch.h"

namespace ferry::tools::evaluate {
namespace {

std::vector<double> lognormal(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> d(-8.0, 3.0);  // errors spanning many decades
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

TEST(QuantileSketch, QuantilesWithinTheRelativeAccuracy) {
  std::vector<double> v = lognormal(20000, 1);
  v.push_back(0.0);
  QuantileSketch s;
  for (double x : v) s.add(x);
  std::sort(v.begin(), v.end());
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    const double exact = v[static_cast<size_t>(std::floor(q * (v.size() - 1)))];
    EXPECT_NEAR(s.quantile(q), exact, exact * QuantileSketch::kRelativeAccuracy * 1.0001) << q;
  }
  EXPECT_EQ(s.quantile(0), 0.0);
  EXPECT_EQ(s.quantile(1), v.back());
  EXPECT_EQ(s.count(), static_cast<int64_t>(v.size()));
}

TEST(QuantileSketch, MergeIsOrderAndSplitIndependent) {
  const std::vector<double> v = lognormal(3000, 2);
  QuantileSketch whole;
  for (double x : v) whole.add(x);
  QuantileSketch a, b, c;
  for (size_t i = 0; i < v.size(); ++i) (i % 3 == 0 ? a : i % 3 == 1 ? b : c).add(v[v.size() - 1 - i]);
  QuantileSketch merged;
  merged.merge(c);
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged.to_json(), whole.to_json());
}

TEST(QuantileSketch, NanIsCountedApartAndInfinityKept) {
  QuantileSketch s;
  s.add(NAN);
  s.add(1.0);
  s.add(INFINITY);
  EXPECT_EQ(s.nan_count(), 1);
  EXPECT_EQ(s.count(), 2);
  EXPECT_TRUE(std::isinf(s.quantile(1)));
  EXPECT_NEAR(s.quantile(0), 1.0, 1e-12);
}

TEST(QuantileSketch, JsonRoundTripsAndRejectsTamperedCounts) {
  QuantileSketch s;
  for (double x : lognormal(500, 3)) s.add(x);
  auto back = QuantileSketch::from_json(s.to_json(), "t");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->to_json(), s.to_json());
  nlohmann::json bad = s.to_json();
  bad["count"] = bad["count"].get<int64_t>() + 1;
  EXPECT_FALSE(QuantileSketch::from_json(bad, "t").ok());
  bad = s.to_json();
  bad["counts"][0] = -5;
  EXPECT_FALSE(QuantileSketch::from_json(bad, "t").ok());
  EXPECT_FALSE(QuantileSketch::from_json(nlohmann::json::array(), "t").ok());
}

}  // namespace
}  // namespace ferry::tools::evaluate
