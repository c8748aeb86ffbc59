// What `ferry evaluate` keeps: one result per sample (streamed to samples.jsonl, never all held), and an
// Aggregate that is order-independent and mergeable: counts, quantile sketches per metric and output, label
// accuracy, and the worst N samples. A local run, a `--shard` run and a Ray actor each build one; merging
// them gives the same aggregate whatever the split.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tools/evaluate/sketch.h"

namespace ferry::tools::evaluate {

// One output of one sample, golden vs target (compare/metrics.h's definitions).
struct OutputResult {
  std::string name;
  double cosine = 0, max_abs = 0, max_rel = 0, rel_euclid = 0;
  bool pass = false;
  bool nonfinite = false;  // the target has NaN/Inf where the golden is finite
  // Classifier outputs (one row of >= 2 classes): the top classes of each side.
  std::optional<int64_t> golden_class, target_class;
  std::vector<int64_t> golden_top5, target_top5;  // up to 5 classes, best first
  std::optional<bool> top5_agree;  // golden's top-1 among the target's 5 best (>= 5 classes)
};

struct SampleResult {
  int64_t index = 0;  // position in the data set (all shards count the same way)
  std::string id;     // path relative to the data root, or the caller's id
  std::string path;   // the file it came from ("" for samples from a Python iterable)
  std::optional<int64_t> label;
  std::vector<OutputResult> outputs;
  // Against the label (first classifier output): whether each side's top-1 / top-5 holds it.
  std::optional<bool> golden_top1_correct, target_top1_correct, golden_top5_correct, target_top5_correct;
  std::string replay;  // worst cases: the .npz of its inputs that `ferry compare --inputs` replays

  bool flipped() const;        // some classifier output's top-1 class changed
  double worst_cosine() const;  // lowest cosine over outputs
  double worst_rel_euclid() const;
};
nlohmann::json to_json(const SampleResult& s);
Result<SampleResult> sample_from_json(const nlohmann::json& j, const std::string& where);

// The bad-case order: class flips first, then lower cosine, then larger relative error, then id (so ties
// rank the same on every run).
bool worse(const SampleResult& a, const SampleResult& b);

struct OutputStats {
  std::string name;
  int64_t samples = 0, passed = 0, nonfinite = 0;
  int64_t classifier_samples = 0, top1_agree = 0, top5_samples = 0, top5_agree = 0;
  // cosine is kept as 1 - cosine (a distance, so small values keep their precision).
  QuantileSketch cosine_distance, max_abs, max_rel, rel_euclid;
};

struct LabelStats {
  int64_t labelled = 0, golden_top1 = 0, target_top1 = 0, golden_top5 = 0, target_top5 = 0;
};

class Aggregate {
 public:
  explicit Aggregate(int worst_n = 20) : worst_n_(worst_n) {}
  void add(const SampleResult& s);
  // Errors when the outputs differ (a partial of another model).
  Status merge(const Aggregate& other, const std::string& where);
  int64_t samples() const { return samples_; }
  const std::vector<OutputStats>& outputs() const { return outputs_; }
  const LabelStats& labels() const { return labels_; }
  // Worst first (see worse()), at most worst_n.
  const std::vector<SampleResult>& worst() const { return worst_; }
  std::vector<SampleResult>& worst() { return worst_; }
  int worst_n() const { return worst_n_; }
  // Whether s would enter the worst list now.
  bool would_keep(const SampleResult& s) const;

  // The mergeable form (sketches included) and the percentiles a person reads.
  nlohmann::json to_json() const;
  static Result<Aggregate> from_json(const nlohmann::json& j, const std::string& where);

 private:
  void keep_worst(const SampleResult& s);
  int worst_n_;
  int64_t samples_ = 0;
  std::vector<OutputStats> outputs_;
  LabelStats labels_;
  std::vector<SampleResult> worst_;
};

}  // namespace ferry::tools::evaluate
