// Error metrics between a golden tensor and a candidate tensor, as msit compare and Polygraphy report
// them, with thresholds (defaults: msit's "normal" cosine >= 0.99 and relative Euclidean <= 0.05).
//
// Definitions (g golden, c candidate, d = c - g, all in double, over every element):
//   cosine      = g.c / (|g| |c|)          (1 when both are all zero, 0 when only one is)
//   max_abs     = max |d|                   mean_abs = mean |d|        rmse = sqrt(mean d^2)
//   max_rel     = max |d| / max(|g|, 1e-7)  (the floor keeps zeros in g from making it infinite)
//   rel_euclid  = |d| / |g|                 (0 when d = 0; infinite when g = 0 and d != 0)
//   snr_db      = 10 log10(sum g^2 / sum d^2)  (infinite when d = 0)
//   kl          = mean over rows (last axis) of sum_j g_j log(g_j / max(c_j, 1e-12)), only when both look
//                 like probability rows (non-negative, each golden row sums to 1 within 1e-3)
//   allclose    = every |d| <= atol + rtol |g| (NumPy's rule; a NaN anywhere fails)
//   top1/top5   = for classifier outputs ([C] or [N, C], C >= 2): the fraction of rows whose golden
//                 argmax is the candidate's argmax / is among the candidate's 5 largest (C >= 5)
// Non-finite values are counted; when either side has any, the sums above are NaN and the row fails.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace ferry::tools::compare {

struct Thresholds {
  double cosine_min = 0.99;
  double rel_euclid_max = 0.05;
  double atol = 1e-4;
  double rtol = 1e-3;
};

struct Metrics {
  int64_t count = 0;
  double cosine = 0, max_abs = 0, max_rel = 0, mean_abs = 0, rmse = 0, rel_euclid = 0, snr_db = 0;
  std::optional<double> kl;
  std::optional<double> top1, top5;
  bool allclose = false;
  int64_t golden_nan = 0, golden_inf = 0, candidate_nan = 0, candidate_inf = 0;
  // cosine >= cosine_min and rel_euclid <= rel_euclid_max and no non-finite value the golden lacks.
  bool pass = false;
};

// Compares two tensors of the same shape (any numeric dtype; compared as double). Errors: shapes or
// element counts that differ (the message gives both), non-numeric dtypes.
Result<Metrics> compute_metrics(const Tensor& golden, const Tensor& candidate, const Thresholds& th,
                                bool classifier = false);

// Whether a tensor looks like a classifier output for top-k ([C] or [N, C] with C >= 2, floating).
bool is_classifier_shape(const Tensor& t);

// "cos 0.999812 relE 0.0041 maxabs 3.1e-05" for one-line reports.
std::string metrics_summary(const Metrics& m);

}  // namespace ferry::tools::compare
