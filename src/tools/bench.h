// What `ferry bench` measures: latency statistics of Session::run over warmup and measured iterations,
// throughput, load time and peak memory, for one or several batch sizes, and the same figures from peer
// runtimes (ONNX Runtime, OpenVINO) run on the same model and inputs in a child process.
//
// Every figure comes from one definition here (compute_stats), also for the peers: a peer reports its raw
// per-iteration latencies and ferry computes the statistics from them, so "median" means the same thing
// on both sides of a ratio.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "ir/graph.h"
#include "backends/backend_options.h"
#include "passes/precision.h"
#include "tools/run_inputs.h"

namespace ferry::tools {

// When a loop of iterations (warmup or measurement) stops. The loop checks before every iteration and
// stops as soon as one of these holds:
//   - max_iterations > 0 and that many ran;
//   - at least min_iterations ran and at least min_seconds passed;
//   - max_seconds > 0, at least one iteration ran and max_seconds passed.
struct LoopPolicy {
  int64_t min_iterations = 0;
  double min_seconds = 0;
  int64_t max_iterations = 0;  // 0: no limit
  double max_seconds = 0;      // 0: no limit
  bool done(int64_t iterations, double elapsed_s) const;
};

// The defaults (documented in docs/cli.md):
//   warmup: 3 iterations and 200 ms, but no more than 1 s once one iteration ran;
//   measure: 10 iterations and 3 s, but no more than 30 s once one iteration ran.
// A slow model (the reference backend on resnet50) thus takes about 30 s per batch instead of minutes.
LoopPolicy default_warmup_policy();
LoopPolicy default_measure_policy();
// --warmup N: exactly N iterations; --warmup-ms T: iterations until T ms passed (at least one if T > 0).
LoopPolicy warmup_iterations_policy(int64_t n);
LoopPolicy warmup_ms_policy(double ms);
// --iterations N and/or --duration S: at least N iterations (exactly N without --duration) and at least S
// seconds; either alone keeps the other from the default off.
LoopPolicy measure_policy(std::optional<int64_t> iterations, std::optional<double> duration_s);

nlohmann::json policy_to_json(const LoopPolicy& p);

struct LatencyStats {
  int64_t iterations = 0;
  double total_s = 0;  // wall time of the measured loop
  double min_ms = 0, mean_ms = 0, median_ms = 0, p90_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  double stddev_ms = 0;  // sample standard deviation (n - 1); 0 for one iteration
  double cv = 0;         // stddev / mean
  double throughput = 0; // items/s: batch * iterations / total_s
};

// Percentiles interpolate linearly between order statistics (NumPy's default), so p50 of an even count
// is the mean of the middle two. `latencies_ms` must not be empty.
LatencyStats compute_stats(std::vector<double> latencies_ms, int64_t batch, double total_s);

// A coefficient of variation above this makes bench print "results unstable".
inline constexpr double kUnstableCv = 0.10;

// One runtime's figures for one batch size.
struct BatchResult {
  int64_t batch = 0;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  double load_s = 0;          // import + prepare (ferry) / session creation (peer)
  double first_run_ms = 0;    // the first iteration (part of the warmup; 0 when there is no warmup)
  int64_t warmup_iterations = 0;
  double warmup_s = 0;
  LatencyStats stats;
  std::vector<double> latencies_ms;
  int64_t peak_rss_bytes = 0;  // VmHWM after this batch
  std::string peak_rss_scope;  // "batch" (peak reset before the batch) or "process" (since start)
};

// How far a peer's outputs are from ferry's for one batch (the last iteration's, one extra untimed run on
// each side): a fast wrong answer should not pass for a fast one.
struct Agreement {
  int64_t batch = 0;
  int64_t outputs_compared = 0;
  double max_abs_diff = 0;  // over every element of every compared output
  double max_rel_diff = 0;  // max |ferry - peer| / max |peer| of that output, worst output
  std::string worst_output;
  std::string problem;      // a missing output, a shape or dtype mismatch, NaN on one side only
};
// Above this relative difference (or with a problem) bench warns that the outputs differ.
inline constexpr double kDisagreeRel = 1e-3;
Result<Agreement> compare_outputs(int64_t batch, const std::vector<std::pair<std::string, Tensor>>& ferry,
                                  const std::vector<std::pair<std::string, Tensor>>& peer);

struct PeerResult {
  std::string name;     // "onnxruntime"
  std::string version;  // "1.32.0"
  std::string model;    // the .onnx file it ran
  std::string settings; // what it was configured with, in words
  std::vector<BatchResult> results;
  std::vector<Agreement> agreement;  // per batch, filled in by run_bench
};

struct BenchOptions {
  std::string model;
  std::vector<int64_t> batches;  // empty: the model's own batch (fixed dim 0, or 1 for a symbolic one)
  int threads = 0;               // 0: one per core (resolved before running, so peers get the same)
  std::string backend = "cpu";
  int opt_level = 2;
  passes::PrecisionOptions precision;  // fp16 runs are emulated: the report says so
  std::string target;                  // runtime::SessionOptions::target
  bool precision_given = false;         // --precision was given (else the target's default applies)
  backends::CpuOptions cpu;            // the cpu backend's kernel choices
  bool allow_newer_opset = false;      // runtime::SessionOptions::allow_newer_opset
  int64_t max_memory = 0;              // runtime::SessionOptions::max_memory
  // Shapes (dim 0 is replaced by each batch size), input files and random-input settings, as `ferry run`.
  InputOptions inputs;
  LoopPolicy warmup = default_warmup_policy();
  LoopPolicy measure = default_measure_policy();
  std::vector<std::string> peers;  // "onnxruntime", "openvino"
  std::string peer_model;          // the .onnx the peers run; default: `model`
  // With peers, each batch's measurement is split into this many rounds that alternate ferry, peer,
  // ferry, peer ...; the statistics pool the rounds. A shared machine's speed drifts over minutes, and
  // measuring one side after the other put that drift into the ratio. Without peers: one round.
  int rounds = kDefaultRounds;
  static constexpr int kDefaultRounds = 3;
  // Progress lines ("batch 8: warming up ..."); may be empty.
  std::function<void(const std::string&)> progress;
};

struct BenchReport {
  std::string ferry_version;  // filled in by the caller (the CLI knows it)
  std::string model;
  std::string backend;
  int opt_level = 0;
  std::string precision = "fp32";  // passes::describe(mode), "emulated" for fp16
  std::string cpu_kernels;         // the kernel choices asked for (backends::to_string(CpuOptions))
  std::string target;              // the session's target label ("" none)
  int threads = 0;
  LoopPolicy warmup, measure;
  int rounds = 1;  // measurement rounds per batch, alternating ferry and the peers
  std::vector<BatchResult> results;
  std::vector<PeerResult> peers;
  std::string date_utc;  // ISO 8601
};

// The measurement policy of round `i` of `rounds`: the iteration counts and times of `p` split so the
// rounds together meet `p` (exactly N iterations stay exactly N in all, each round at least one).
LoopPolicy round_policy(const LoopPolicy& p, int rounds, int i);
// How many rounds `p` allows: no more than an exact iteration count, at least 1.
int effective_rounds(const LoopPolicy& p, int rounds);

// The input shapes for one batch size: dim 0 of every input of rank >= 1 becomes `batch` (an error names
// the input when the model fixes dim 0 to another size); other dims come from --shape or the model and
// must be static. `batch` nullopt: the model's own dims, a symbolic dim 0 taking 1. Returns the shapes by
// input name and the batch that applies (dim 0 of the first input of rank >= 1, 1 when there is none).
Result<std::pair<std::map<std::string, std::vector<int64_t>>, int64_t>> resolve_batch_shapes(
    const ir::Graph& graph, const std::map<std::string, std::vector<int64_t>>& user_shapes,
    std::optional<int64_t> batch);

// Runs the whole benchmark, batch by batch: ferry loads and warms up, then measures in rounds that
// alternate with each peer (a child process per round, warming up each time) on the same inputs.
Result<BenchReport> run_bench(const BenchOptions& opts);

// The peak resident set (VmHWM) of this process in bytes, 0 when /proc cannot tell.
int64_t peak_rss_bytes();
// Resets VmHWM to the current RSS (Linux /proc/self/clear_refs "5"); false when the kernel refuses.
bool reset_peak_rss();

// ferry / peer for one figure each: latency ratios below 1 and throughput ratios above 1 mean ferry is
// faster; a memory ratio below 1 means ferry needs less.
struct Ratios {
  int64_t batch = 0;
  double median_latency = 0, p90_latency = 0, throughput = 0, peak_memory = 0;
};
std::vector<Ratios> compute_ratios(const std::vector<BatchResult>& ferry, const std::vector<BatchResult>& peer);

// The readable report (tables, ratio lines, "results unstable" warnings) and the JSON (schema in
// docs/cli.md, "ferry.bench/1").
std::string format_bench_report(const BenchReport& r);
nlohmann::json bench_report_to_json(const BenchReport& r);

// Peers: runs bench/peers/<name>_peer.py with the project venv's python on `model`, for the inputs already
// written as .npz files (one per batch, in order), with the same threads and loop policies. Defined in
// bench_peer.cc.
struct PeerJob {
  std::string name;
  std::string model;
  int threads = 0;
  LoopPolicy warmup, measure;
  std::string precision = "fp32";  // ferry's mode (passes::to_string): a peer that can computes at it too
  struct Batch {
    int64_t batch = 0;
    std::string inputs;   // .npz ferry wrote
    std::string outputs;  // .npz the peer writes its outputs to
  };
  std::vector<Batch> batches;
};
Result<PeerResult> run_peer(const PeerJob& job, const std::function<void(const std::string&)>& progress);
// The python that runs peers: $FERRY_PYTHON, else <repo>/.venv/bin/python, the repo being the first folder
// above the ferry executable that holds bench/peers/. Errors say how to get it.
Result<std::string> peer_script(const std::string& name);
Result<std::string> peer_python();
// Parses a peer's result JSON (what the script prints last); recomputes the statistics from its latencies.
Result<PeerResult> parse_peer_json(const std::string& text);

}  // namespace ferry::tools
