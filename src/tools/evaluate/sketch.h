// A mergeable quantile sketch for non-negative metrics (DDSketch, Masson, Rim and Lee, VLDB 2019): values
// fall in logarithmic buckets of relative width 2a, so any quantile comes back within a relative error a
// (here 0.5%), memory grows with the log of the value range rather than with the sample count, and two
// sketches merge by adding bucket counts: the result does not depend on how samples were split among
// shards or in what order they came. This is how `ferry evaluate` aggregates a million samples, across
// Ray actors or `--shard` runs, without holding per-sample values in one process.
#pragma once
#include <cstdint>
#include <map>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace ferry::tools::evaluate {

// JSON has no NaN or infinity: evaluate's reports write them as the strings "nan", "inf", "-inf".
nlohmann::json json_number(double v);
double number_from_json(const nlohmann::json& j);  // throws nlohmann::json::type_error on other strings

class QuantileSketch {
 public:
  static constexpr double kRelativeAccuracy = 0.005;
  // The value a bucket stands for (what its quantiles return), for plots of the buckets.
  static double bucket_value(int key);
  QuantileSketch();
  // x < 0 counts as 0 (metrics are distances); NaN is counted apart and never enters a quantile.
  void add(double x);
  void merge(const QuantileSketch& other);
  int64_t count() const { return count_; }  // finite values (and +inf) added
  int64_t nan_count() const { return nans_; }
  double min() const { return min_; }
  double max() const { return max_; }
  // The q-quantile (0 <= q <= 1) by the lower rank rule (rank floor(q * (count - 1))), within the relative
  // accuracy; exact at q = 0 and q = 1. 0 when empty.
  double quantile(double q) const;
  nlohmann::json to_json() const;
  static Result<QuantileSketch> from_json(const nlohmann::json& j, const std::string& where);

 private:
  static int key_of(double x);
  std::map<int, int64_t> buckets_;  // key -> count (positive finite values)
  int64_t zeros_ = 0, infs_ = 0, nans_ = 0, count_ = 0;
  double min_ = 0, max_ = 0;
};

}  // namespace ferry::tools::evaluate
