#include "tools/evaluate/sketch.h"

#include <cmath>
#include <limits>

namespace ferry::tools::evaluate {

namespace {
constexpr double kGamma = (1 + QuantileSketch::kRelativeAccuracy) / (1 - QuantileSketch::kRelativeAccuracy);
const double kLogGamma = std::log(kGamma);
// Below this a metric is zero for every purpose (and its log would need a key far from the rest).
constexpr double kTiny = 1e-30;
}  // namespace

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double number_from_json(const nlohmann::json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw nlohmann::json::type_error::create(302, "not a number: " + s, nullptr);
  }
  return j.get<double>();
}

QuantileSketch::QuantileSketch() = default;

int QuantileSketch::key_of(double x) { return static_cast<int>(std::ceil(std::log(x) / kLogGamma)); }

double QuantileSketch::bucket_value(int key) { return 2 * std::pow(kGamma, key) / (kGamma + 1); }

void QuantileSketch::add(double x) {
  if (std::isnan(x)) {
    ++nans_;
    return;
  }
  if (x < 0) x = 0;
  min_ = count_ == 0 ? x : std::min(min_, x);
  max_ = count_ == 0 ? x : std::max(max_, x);
  ++count_;
  if (x < kTiny)
    ++zeros_;
  else if (std::isinf(x))
    ++infs_;
  else
    ++buckets_[key_of(x)];
}

void QuantileSketch::merge(const QuantileSketch& o) {
  if (o.count_ > 0) {
    min_ = count_ == 0 ? o.min_ : std::min(min_, o.min_);
    max_ = count_ == 0 ? o.max_ : std::max(max_, o.max_);
  }
  for (auto& [k, c] : o.buckets_) buckets_[k] += c;
  zeros_ += o.zeros_;
  infs_ += o.infs_;
  nans_ += o.nans_;
  count_ += o.count_;
}

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return 0;
  if (q <= 0) return min_;
  if (q >= 1) return max_;
  const int64_t rank = static_cast<int64_t>(std::floor(q * static_cast<double>(count_ - 1)));
  int64_t seen = zeros_;
  if (rank < seen) return min_ < kTiny ? min_ : 0.0;
  for (auto& [k, c] : buckets_) {
    seen += c;
    if (rank < seen) return std::clamp(bucket_value(k), min_, max_);
  }
  return std::numeric_limits<double>::infinity();
}

nlohmann::json QuantileSketch::to_json() const {
  nlohmann::json keys = nlohmann::json::array(), counts = nlohmann::json::array();
  for (auto& [k, c] : buckets_) {
    keys.push_back(k);
    counts.push_back(c);
  }
  return {{"relative_accuracy", kRelativeAccuracy}, {"count", count_},      {"zeros", zeros_},
          {"infs", infs_},                       {"nans", nans_},        {"min", json_number(min_)},
          {"max", json_number(max_)},            {"keys", keys},         {"counts", counts}};
}

Result<QuantileSketch> QuantileSketch::from_json(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& why) { return Status::invalid(where + ": not a ferry quantile sketch (" + why + ")"); };
  if (!j.is_object()) return bad("not an object");
  if (j.value("relative_accuracy", 0.0) != kRelativeAccuracy) return bad("another relative accuracy");
  QuantileSketch s;
  try {
    s.count_ = j.at("count").get<int64_t>();
    s.zeros_ = j.at("zeros").get<int64_t>();
    s.infs_ = j.at("infs").get<int64_t>();
    s.nans_ = j.at("nans").get<int64_t>();
    s.min_ = number_from_json(j.at("min"));
    s.max_ = number_from_json(j.at("max"));
    auto& keys = j.at("keys");
    auto& counts = j.at("counts");
    if (!keys.is_array() || !counts.is_array() || keys.size() != counts.size()) return bad("keys and counts differ");
    int64_t total = s.zeros_ + s.infs_;
    for (size_t i = 0; i < keys.size(); ++i) {
      int64_t c = counts[i].get<int64_t>();
      if (c <= 0) return bad("a bucket count under 1");
      s.buckets_[keys[i].get<int>()] += c;
      total += c;
    }
    if (total != s.count_ || s.count_ < 0 || s.nans_ < 0) return bad("counts do not add up");
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  return s;
}

}  // namespace ferry::tools::evaluate
