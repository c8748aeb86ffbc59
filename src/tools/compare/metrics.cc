#include "tools/compare/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "core/shape.h"

namespace ferry::tools::compare {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Rows of the last axis (a scalar or 1-D tensor is one row).
int64_t row_length(const Tensor& t) { return t.rank() == 0 ? 1 : std::max<int64_t>(t.dims().back(), 1); }

std::optional<double> kl_divergence(const std::vector<double>& g, const std::vector<double>& c, int64_t row) {
  if (g.empty() || row <= 1 || g.size() % row != 0) return std::nullopt;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(g[i] >= 0) || !(c[i] >= 0)) return std::nullopt;
  const size_t rows = g.size() / row;
  double total = 0;
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0, kl = 0;
    for (int64_t j = 0; j < row; ++j) {
      double p = g[r * row + j], q = c[r * row + j];
      sum += p;
      if (p > 0) kl += p * std::log(p / std::max(q, 1e-12));
    }
    if (std::abs(sum - 1.0) > 1e-3) return std::nullopt;
    total += kl;
  }
  return total / rows;
}

// Indices of the k largest values of row r, largest first.
std::vector<int64_t> top_k(const std::vector<double>& v, size_t r, int64_t row, int64_t k) {
  std::vector<int64_t> idx(row);
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, row);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return v[r * row + a] > v[r * row + b]; });
  idx.resize(k);
  return idx;
}

}  // namespace

bool is_classifier_shape(const Tensor& t) {
  if (!is_floating(t.dtype())) return false;
  if (t.rank() == 1) return t.dim(0) >= 2;
  if (t.rank() == 2) return t.dim(1) >= 2;
  return false;
}

Result<Metrics> compute_metrics(const Tensor& golden, const Tensor& candidate, const Thresholds& th, bool classifier) {
  if (golden.dims() != candidate.dims())
    return Status::invalid("shapes differ: golden " + dims_to_string(golden.dims()) + ", candidate " +
                           dims_to_string(candidate.dims()));
  for (const Tensor* t : {&golden, &candidate})
    if (!t->defined()) return Status::invalid("cannot compare an undefined tensor");
  const std::vector<double> g = golden.to_double_vector();
  const std::vector<double> c = candidate.to_double_vector();
  Metrics m;
  m.count = static_cast<int64_t>(g.size());
  double dot = 0, gg = 0, cc = 0, dd = 0, sum_abs = 0, max_abs = 0, max_rel = 0;
  bool close = true;
  for (size_t i = 0; i < g.size(); ++i) {
    const double a = g[i], b = c[i];
    if (std::isnan(a)) ++m.golden_nan;
    if (std::isinf(a)) ++m.golden_inf;
    if (std::isnan(b)) ++m.candidate_nan;
    if (std::isinf(b)) ++m.candidate_inf;
    const double d = b - a;
    dot += a * b;
    gg += a * a;
    cc += b * b;
    dd += d * d;
    const double ad = std::abs(d);
    sum_abs += ad;
    max_abs = std::max(max_abs, ad);
    max_rel = std::max(max_rel, ad / std::max(std::abs(a), 1e-7));
    if (!(ad <= th.atol + th.rtol * std::abs(a))) close = false;  // NaN fails too
  }
  const bool nonfinite = m.golden_nan + m.golden_inf + m.candidate_nan + m.candidate_inf > 0;
  m.allclose = close;
  if (nonfinite) {
    m.cosine = m.max_abs = m.max_rel = m.mean_abs = m.rmse = m.rel_euclid = m.snr_db = kNaN;
  } else {
    const double n = std::max<double>(static_cast<double>(g.size()), 1);
    if (gg == 0 && cc == 0) m.cosine = 1;
    else if (gg == 0 || cc == 0) m.cosine = 0;
    else m.cosine = std::clamp(dot / (std::sqrt(gg) * std::sqrt(cc)), -1.0, 1.0);
    m.max_abs = max_abs;
    m.max_rel = max_rel;
    m.mean_abs = sum_abs / n;
    m.rmse = std::sqrt(dd / n);
    m.rel_euclid = dd == 0 ? 0 : (gg == 0 ? kInf : std::sqrt(dd) / std::sqrt(gg));
    m.snr_db = dd == 0 ? kInf : (gg == 0 ? -kInf : 10 * std::log10(gg / dd));
    if (is_floating(golden.dtype()) || is_floating(candidate.dtype()))
      m.kl = kl_divergence(g, c, row_length(golden));
    if (classifier && is_classifier_shape(golden) && !g.empty()) {
      const int64_t row = row_length(golden);
      const size_t rows = g.size() / row;
      int64_t hit1 = 0, hit5 = 0;
      for (size_t r = 0; r < rows; ++r) {
        const int64_t want = top_k(g, r, row, 1)[0];
        const std::vector<int64_t> got = top_k(c, r, row, 5);
        if (got[0] == want) ++hit1;
        if (std::find(got.begin(), got.end(), want) != got.end()) ++hit5;
      }
      m.top1 = static_cast<double>(hit1) / rows;
      if (row >= 5) m.top5 = static_cast<double>(hit5) / rows;
    }
  }
  // A golden that is itself non-finite where the candidate matches it is not the candidate's fault.
  const bool new_nonfinite = m.candidate_nan > m.golden_nan || m.candidate_inf > m.golden_inf;
  m.pass = !nonfinite && m.cosine >= th.cosine_min && m.rel_euclid <= th.rel_euclid_max;
  if (nonfinite && !new_nonfinite && m.candidate_nan == m.golden_nan && m.candidate_inf == m.golden_inf) {
    // (e.g. a -inf mask both sides carry)
    // Both sides hold the same non-finite counts: judge by the finite pairs only.
    double dot2 = 0, gg2 = 0, cc2 = 0, dd2 = 0;
    bool same_positions = true;
    for (size_t i = 0; i < g.size(); ++i) {
      const bool fa = std::isfinite(g[i]), fb = std::isfinite(c[i]);
      if (fa != fb) same_positions = false;
      if (!fa || !fb) continue;
      dot2 += g[i] * c[i], gg2 += g[i] * g[i], cc2 += c[i] * c[i], dd2 += (c[i] - g[i]) * (c[i] - g[i]);
    }
    double cos2 = (gg2 == 0 && cc2 == 0) ? 1 : (gg2 == 0 || cc2 == 0) ? 0 : dot2 / std::sqrt(gg2 * cc2);
    double re2 = dd2 == 0 ? 0 : (gg2 == 0 ? kInf : std::sqrt(dd2 / gg2));
    m.pass = same_positions && cos2 >= th.cosine_min && re2 <= th.rel_euclid_max;
  }
  return m;
}

std::string metrics_summary(const Metrics& m) {
  std::string s;
  if (m.candidate_nan + m.candidate_inf > 0)
    s = fmt::format("candidate has {} NaN, {} Inf; ", m.candidate_nan, m.candidate_inf);
  s += fmt::format("cos {:.6f} relE {:.4g} maxabs {:.3g} maxrel {:.3g}", m.cosine, m.rel_euclid, m.max_abs, m.max_rel);
  if (m.top1) s += fmt::format(" top1 {:.3f}", *m.top1);
  if (m.top5) s += fmt::format(" top5 {:.3f}", *m.top5);
  return s;
}

}  // namespace ferry::tools::compare
