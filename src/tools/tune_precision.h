// `ferry tune-precision`: a small set of nodes to keep in fp32 so that the model in fp16/bf16 still meets
// a metric on every output. The search:
//   1. the golden (reference backend, fp32) and the all-low candidate on the same inputs; if the
//      candidate already meets the metric, the keep list is empty;
//   2. seeds: every node that writes or reads a tensor whose golden values leave the low type's range
//      (fp16: |x| > 65504) — in fp16 those are Inf whatever else is kept;
//   3. ranking: each remaining node's own error in the all-low run (the error of its output minus the
//      worst error of its inputs, from the layerwise comparison with the golden), largest first;
//   4. bisection over that order for the shortest prefix (after the seeds) that passes, then a pruning
//      sweep that drops any chosen node the metric does not need.
// Each evaluation loads the model with the keep list and runs it: the report counts them.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "runtime/session.h"
#include "tools/compare/metrics.h"
#include "tools/run_inputs.h"

namespace ferry::tools {

// "cosine>=0.999", "rel_euclid<=0.01", "max_abs<=1e-3", "snr_db>=40", "top1>=1".
struct MetricGoal {
  std::string metric;  // cosine, rel_euclid, max_abs, max_rel, rmse, snr_db, top1
  bool at_least = true;
  double value = 0.999;
  std::string text() const;
  // The metric's value in m (top1 of a non-classifier output counts as 1).
  double value_of(const compare::Metrics& m) const;
  bool met(const compare::Metrics& m) const;
};
Result<MetricGoal> parse_metric_goal(const std::string& s);

struct TuneOptions {
  std::string model;
  runtime::SessionOptions session;  // backend, opt level, threads; precision.mode fp16 or bf16
  InputOptions inputs;
  MetricGoal goal;
  int max_evaluations = 64;
  int timing_runs = 5;  // runs per configuration for the speed figures
  std::function<void(const std::string&)> progress;
};

struct TuneEvaluation {
  std::vector<std::string> keep;
  double worst = 0;  // the goal metric's worst value over the outputs
  bool pass = false;
};

struct TuneReport {
  std::string model, precision, goal;
  std::vector<std::string> seeds;      // nodes on out-of-range tensors
  std::vector<std::string> ranked;     // the rest, by own error (first 20)
  std::vector<std::string> keep;       // the answer (optimized-graph node names; keep lists match them)
  bool pass = false;                   // whether `keep` meets the goal
  int max_evaluations = 0;             // the budget searched with
  // Kept nodes the pruning sweep had not yet tried to drop when --max-evaluations ran out: while it is
  // above 0, `keep` passes but is not minimal.
  int untried = 0;
  int candidates = 0;                  // low-precision nodes searched over
  std::vector<TuneEvaluation> evaluations;
  TuneEvaluation all_low;              // nothing kept
  std::vector<std::pair<std::string, compare::Metrics>> final_metrics;  // per output, with `keep`
  double fp32_ms = 0, all_low_ms = 0, tuned_ms = 0;  // median latency of timing_runs runs
};

Result<TuneReport> tune_precision(const TuneOptions& o);

// The keep-list file `compile --keep-fp32` reads: a comment header (command, goal, result), one node per line.
std::string keep_list_text(const TuneReport& r);
std::string format_tune_report(const TuneReport& r);
nlohmann::json tune_report_to_json(const TuneReport& r);

}  // namespace ferry::tools
