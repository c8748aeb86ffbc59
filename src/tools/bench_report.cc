// `ferry bench`'s report: the table people read and the JSON scripts read (schema "ferry.bench/1",
// documented in docs/cli.md).
#include <cmath>

#include <fmt/format.h>

#include "tools/bench.h"

namespace ferry::tools {

namespace {

// "3 iterations and 0.2 s (stops at 1 s)", "exactly 5 iterations", "none".
std::string describe(const LoopPolicy& p) {
  if (p.max_iterations > 0 && p.min_iterations >= p.max_iterations)
    return p.max_iterations == 0 ? "none" : fmt::format("exactly {} iteration(s)", p.max_iterations);
  if (p.min_iterations == 0 && p.min_seconds <= 0) return "none";
  std::string out = fmt::format("{} iteration(s)", p.min_iterations);
  if (p.min_seconds > 0) out += fmt::format(" and {:g} s", p.min_seconds);
  if (p.max_seconds > 0) out += fmt::format(" (stops at {:g} s)", p.max_seconds);
  return out;
}

const Agreement* agreement_for(const PeerResult& p, int64_t batch) {
  for (const Agreement& a : p.agreement)
    if (a.batch == batch) return &a;
  return nullptr;
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string table(const std::vector<BatchResult>& rows) {
  std::string out = fmt::format("  {:>5} {:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>10} {:>9}\n",
                                "batch", "iters", "load s", "first ms", "min ms", "mean ms", "median ms", "p90 ms",
                                "p95 ms", "p99 ms", "max ms", "CV", "items/s", "peak MiB");
  for (const BatchResult& b : rows) {
    const LatencyStats& s = b.stats;
    out += fmt::format("  {:>5} {:>6} {:>8.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} "
                       "{:>5.1f}% {:>10.2f} {:>9.1f}\n",
                       b.batch, s.iterations, b.load_s, b.first_run_ms, s.min_ms, s.mean_ms, s.median_ms, s.p90_ms,
                       s.p95_ms, s.p99_ms, s.max_ms, s.cv * 100, s.throughput, mib(b.peak_rss_bytes));
  }
  return out;
}

std::string warnings(const std::string& who, const std::vector<BatchResult>& rows) {
  std::string out;
  for (const BatchResult& b : rows)
    if (b.stats.cv > kUnstableCv)
      out += fmt::format("warning: {} batch {}: results unstable: CV {:.0f}%; close other programs or use --duration\n",
                         who, b.batch, b.stats.cv * 100);
  return out;
}

nlohmann::json stats_json(const LatencyStats& s) {
  return {{"min", s.min_ms},       {"mean", s.mean_ms}, {"median", s.median_ms}, {"p90", s.p90_ms},
          {"p95", s.p95_ms},       {"p99", s.p99_ms},   {"max", s.max_ms},       {"stddev", s.stddev_ms}};
}

nlohmann::json batch_json(const BatchResult& b) {
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& [n, d] : b.input_shapes) shapes[n] = d;
  return {{"batch", b.batch},
          {"input_shapes", shapes},
          {"load_s", b.load_s},
          {"first_run_ms", b.first_run_ms},
          {"warmup_iterations", b.warmup_iterations},
          {"warmup_s", b.warmup_s},
          {"iterations", b.stats.iterations},
          {"total_s", b.stats.total_s},
          {"latency_ms", stats_json(b.stats)},
          {"cv", b.stats.cv},
          {"unstable", b.stats.cv > kUnstableCv},
          {"throughput_items_per_s", b.stats.throughput},
          {"peak_rss_bytes", b.peak_rss_bytes},
          {"peak_rss_scope", b.peak_rss_scope},
          {"latencies_ms", b.latencies_ms}};
}

}  // namespace

std::string format_bench_report(const BenchReport& r) {
  std::string out = fmt::format("ferry bench: {}\n", r.model);
  out += fmt::format("ferry {} backend, opt-level {}, precision {}, {} thread(s); warmup {}, measure {}{}\n", r.backend,
                     r.opt_level, r.precision, r.threads, describe(r.warmup), describe(r.measure),
                     r.rounds > 1 ? fmt::format(" in {} rounds alternating with the peers", r.rounds) : "");
  if (!r.target.empty()) out += "target " + r.target + "\n";
  if (r.backend == "cpu" && !r.cpu_kernels.empty()) out += "cpu kernels: " + r.cpu_kernels + "\n";
  out += table(r.results);
  out += warnings("ferry", r.results);
  for (const PeerResult& p : r.peers) {
    out += fmt::format("\n{} {} on {} ({}), {} with the same inputs:\n", p.name, p.version, p.model, p.settings,
                       r.rounds > 1 ? fmt::format("in a child process per round, alternating with ferry ({} rounds)", r.rounds)
                                    : std::string("run after ferry in its own child process"));
    out += table(p.results);
    out += warnings(p.name, p.results);
    out += fmt::format("ferry/{} (latency below 1x and throughput above 1x: ferry is faster):\n", p.name);
    out += fmt::format("  {:>5} {:>14} {:>11} {:>11} {:>12}   {}\n", "batch", "median latency", "p90 latency",
                       "throughput", "peak memory", "outputs: max |ferry - peer| (relative to max |peer|)");
    std::string disagree;
    for (const Ratios& q : compute_ratios(r.results, p.results)) {
      const Agreement* ag = agreement_for(p, q.batch);
      std::string diff = ag ? fmt::format("{:.3g} ({:.2g})", ag->max_abs_diff, ag->max_rel_diff) : "-";
      out += fmt::format("  {:>5} {:>13.3f}x {:>10.3f}x {:>10.3f}x {:>11.3f}x   {}\n", q.batch, q.median_latency,
                         q.p90_latency, q.throughput, q.peak_memory, diff);
      if (ag && (!ag->problem.empty() || ag->max_rel_diff > kDisagreeRel))
        disagree += fmt::format("warning: batch {}: ferry's and {}'s outputs differ: {}\n", q.batch, p.name,
                                ag->problem.empty() ? fmt::format("max |diff| {:.3g} in '{}', {:.2g} of its largest value",
                                                                  ag->max_abs_diff, ag->worst_output, ag->max_rel_diff)
                                                    : ag->problem);
    }
    out += disagree;
  }
  return out;
}

nlohmann::json bench_report_to_json(const BenchReport& r) {
  nlohmann::json j;
  j["schema"] = "ferry.bench/1";
  j["ferry_version"] = r.ferry_version;
  j["date_utc"] = r.date_utc;
  j["model"] = r.model;
  j["backend"] = r.backend;
  j["precision"] = r.precision;
  j["target"] = r.target;
  j["cpu_kernels"] = r.cpu_kernels;
  j["opt_level"] = r.opt_level;
  j["threads"] = r.threads;
  j["warmup_policy"] = policy_to_json(r.warmup);
  j["measure_policy"] = policy_to_json(r.measure);
  j["rounds"] = r.rounds;
  j["order"] = r.peers.empty() ? "ferry only"
               : r.rounds > 1 ? fmt::format("per batch: ferry loads and warms up, then {} rounds of (ferry measures, "
                                            "each peer in a fresh child process warms up and measures); the "
                                            "statistics pool the rounds", r.rounds)
                              : std::string("per batch: ferry loads, warms up and measures, then each peer in a "
                                            "child process");
  j["unstable_cv"] = kUnstableCv;
  j["disagree_rel"] = kDisagreeRel;
  j["results"] = nlohmann::json::array();
  for (const BatchResult& b : r.results) j["results"].push_back(batch_json(b));
  j["peers"] = nlohmann::json::array();
  for (const PeerResult& p : r.peers) {
    nlohmann::json pj = {{"name", p.name}, {"version", p.version}, {"model", p.model}, {"settings", p.settings}};
    pj["results"] = nlohmann::json::array();
    for (const BatchResult& b : p.results) pj["results"].push_back(batch_json(b));
    pj["ratios"] = nlohmann::json::array();
    for (const Ratios& q : compute_ratios(r.results, p.results))
      pj["ratios"].push_back({{"batch", q.batch},
                              {"median_latency", q.median_latency},
                              {"p90_latency", q.p90_latency},
                              {"throughput", q.throughput},
                              {"peak_memory", q.peak_memory}});
    pj["agreement"] = nlohmann::json::array();
    for (const Agreement& a : p.agreement)
      pj["agreement"].push_back({{"batch", a.batch},
                                 {"outputs_compared", a.outputs_compared},
                                 {"max_abs_diff", a.max_abs_diff},
                                 {"max_rel_diff", a.max_rel_diff},
                                 {"worst_output", a.worst_output},
                                 {"problem", a.problem},
                                 {"agrees", a.problem.empty() && a.max_rel_diff <= kDisagreeRel}});
    j["peers"].push_back(pj);
  }
  return j;
}

}  // namespace ferry::tools
