#include "tools/bench.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/shape.h"
#include "runtime/session.h"
#include "runtime/model_session.h"
#include "tools/bench_internal.h"

namespace ferry::tools {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// "1,3,224,224", as --shape takes it.
std::string declared(const ir::Value& v) {
  return std::string(dtype_name(v.dtype)) + (v.shape ? shape_to_string(*v.shape) : std::string("[?]"));
}

// A folder that removes itself: the .npz inputs handed to peers.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Result<std::string> make_temp_dir() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / "ferry_bench_XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::io("cannot create a temporary folder under " + base.string());
  return tmpl;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Runs `session` until the policy says stop; appends each iteration's latency (ms).
Status run_loop(runtime::Session& session, const std::map<std::string, RtValue>& feeds, const LoopPolicy& policy,
                std::vector<double>& latencies, double& total_s, const std::function<void(int64_t, double)>& tick) {
  auto start = Clock::now();
  int64_t n = 0;
  double elapsed = 0;
  while (!policy.done(n, elapsed)) {
    auto t0 = Clock::now();
    auto out = session.run(feeds);
    auto t1 = Clock::now();
    if (!out.ok()) return out.status();
    latencies.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    ++n;
    elapsed = std::chrono::duration<double>(t1 - start).count();
    if (tick) tick(n, elapsed);
  }
  total_s = elapsed;
  return Status();
}

// Adds one round of a peer's figures for the batch being measured: the first round of a batch opens its
// result (load time, first run from there), later ones add their latencies and time; the caller
// recomputes the statistics once the batch's rounds are done.
void add_peer_round(PeerResult& into, PeerResult&& round, bool first_round) {
  BatchResult& b = round.results.front();
  if (into.name.empty()) {
    into.name = round.name;
    into.version = round.version;
    into.model = round.model;
    into.settings = round.settings;
  }
  if (first_round) {
    into.results.push_back(std::move(b));
    return;
  }
  BatchResult& acc = into.results.back();
  acc.latencies_ms.insert(acc.latencies_ms.end(), b.latencies_ms.begin(), b.latencies_ms.end());
  acc.stats.total_s += b.stats.total_s;
  acc.warmup_iterations += b.warmup_iterations;
  acc.warmup_s += b.warmup_s;
  acc.peak_rss_bytes = std::max(acc.peak_rss_bytes, b.peak_rss_bytes);
}

}  // namespace

bool LoopPolicy::done(int64_t iterations, double elapsed_s) const {
  if (max_iterations > 0 && iterations >= max_iterations) return true;
  if (iterations >= min_iterations && elapsed_s >= min_seconds) return true;
  if (max_seconds > 0 && iterations >= 1 && elapsed_s >= max_seconds) return true;
  return false;
}

LoopPolicy default_warmup_policy() { return {3, 0.2, 0, 1.0}; }
LoopPolicy default_measure_policy() { return {10, 3.0, 0, 30.0}; }
LoopPolicy warmup_iterations_policy(int64_t n) { return {n, 0, n, 0}; }
LoopPolicy warmup_ms_policy(double ms) { return {ms > 0 ? 1 : 0, ms / 1000.0, 0, 0}; }

LoopPolicy measure_policy(std::optional<int64_t> iterations, std::optional<double> duration_s) {
  if (!iterations && !duration_s) return default_measure_policy();
  LoopPolicy p;
  p.min_iterations = iterations ? *iterations : 1;
  p.min_seconds = duration_s ? *duration_s : 0;
  if (iterations && !duration_s) p.max_iterations = *iterations;
  return p;
}

int effective_rounds(const LoopPolicy& p, int rounds) {
  rounds = std::max(1, rounds);
  if (p.max_iterations > 0) rounds = static_cast<int>(std::min<int64_t>(rounds, p.max_iterations));
  return rounds;
}

LoopPolicy round_policy(const LoopPolicy& p, int rounds, int i) {
  rounds = std::max(1, rounds);
  auto share = [&](int64_t n) -> int64_t {
    if (n <= 0) return n;
    return std::max<int64_t>(1, n / rounds + (i < n % rounds ? 1 : 0));
  };
  LoopPolicy r;
  r.min_iterations = share(p.min_iterations);
  r.max_iterations = share(p.max_iterations);
  r.min_seconds = p.min_seconds / rounds;
  r.max_seconds = p.max_seconds / rounds;
  return r;
}

nlohmann::json policy_to_json(const LoopPolicy& p) {
  return {{"min_iterations", p.min_iterations},
          {"min_seconds", p.min_seconds},
          {"max_iterations", p.max_iterations},
          {"max_seconds", p.max_seconds}};
}

LatencyStats compute_stats(std::vector<double> x, int64_t batch, double total_s) {
  LatencyStats s;
  if (x.empty()) return s;
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  auto pct = [&](double p) {
    double pos = p / 100.0 * static_cast<double>(n - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, n - 1);
    return x[lo] + (pos - static_cast<double>(lo)) * (x[hi] - x[lo]);
  };
  double sum = 0;
  for (double v : x) sum += v;
  s.iterations = static_cast<int64_t>(n);
  s.total_s = total_s;
  s.min_ms = x.front();
  s.max_ms = x.back();
  s.mean_ms = sum / static_cast<double>(n);
  s.median_ms = pct(50);
  s.p90_ms = pct(90);
  s.p95_ms = pct(95);
  s.p99_ms = pct(99);
  if (n > 1) {
    double ss = 0;
    for (double v : x) ss += (v - s.mean_ms) * (v - s.mean_ms);
    s.stddev_ms = std::sqrt(ss / static_cast<double>(n - 1));
  }
  s.cv = s.mean_ms > 0 ? s.stddev_ms / s.mean_ms : 0;
  // Throughput over the whole loop's wall time (what a caller feeding batches back to back gets), not
  // batch / median; without a total (a peer that did not report one) fall back to the sum of latencies.
  double t = total_s > 0 ? total_s : sum / 1000.0;
  s.throughput = t > 0 ? static_cast<double>(batch) * static_cast<double>(n) / t : 0;
  return s;
}

int64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      long long kb = 0;
      if (std::sscanf(line.c_str() + 6, "%lld", &kb) == 1) return static_cast<int64_t>(kb) * 1024;
    }
  }
  return 0;
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.close();
  return static_cast<bool>(f);
}

Result<std::pair<std::map<std::string, std::vector<int64_t>>, int64_t>> resolve_batch_shapes(
    const ir::Graph& graph, const std::map<std::string, std::vector<int64_t>>& user_shapes,
    std::optional<int64_t> batch) {
  std::map<std::string, std::vector<int64_t>> out;
  std::optional<int64_t> found;
  std::string names;
  for (const ir::Value* v : graph.inputs)
    if (!v->is_constant()) names += (names.empty() ? "'" : ", '") + v->name + "'";
  for (const auto& [name, dims] : user_shapes) {
    bool known = false;
    for (const ir::Value* v : graph.inputs) known = known || (!v->is_constant() && v->name == name);
    if (!known)
      return Status::invalid("--shape " + name + "=...: the model has no input '" + name + "'; its inputs are: " +
                             (names.empty() ? "(none)" : names));
  }
  for (const ir::Value* v : graph.inputs) {
    if (v->is_constant()) continue;
    std::vector<int64_t> dims;
    auto user = user_shapes.find(v->name);
    if (user != user_shapes.end()) {
      dims = user->second;
    } else if (!v->shape) {
      return Status::invalid("input '" + v->name + "' has an unknown shape; pass --shape " + v->name +
                             "=DIMS (dim 0 is the batch)");
    } else {
      for (const Dim& d : *v->shape) dims.push_back(d.is_static() ? d.value : -1);
    }
    if (!dims.empty()) {
      const bool fixed0 = v->shape && !v->shape->empty() && (*v->shape)[0].is_static();
      if (batch) {
        if (fixed0 && (*v->shape)[0].value != *batch)
          return Status::invalid("input '" + v->name + "' has a fixed batch dimension (" + declared(*v) +
                                 "), so --batch " + std::to_string(*batch) +
                                 " cannot apply; export the model with a dynamic dim 0");
        dims[0] = *batch;
      } else if (dims[0] < 0) {
        dims[0] = 1;
      }
      if (!found) found = dims[0];
    }
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i] < 0) {
        return Status::invalid("input '" + v->name + "' (" + declared(*v) + ") has dynamic dimension " +
                               std::to_string(i) + " besides the batch; pass its size with --shape " +
                               shape_argument(*v, dims));
      }
    out[v->name] = dims;
  }
  return std::make_pair(out, found.value_or(1));
}

std::vector<Ratios> compute_ratios(const std::vector<BatchResult>& ferry, const std::vector<BatchResult>& peer) {
  std::vector<Ratios> out;
  auto div = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  for (const BatchResult& f : ferry)
    for (const BatchResult& p : peer)
      if (p.batch == f.batch) {
        out.push_back({f.batch, div(f.stats.median_ms, p.stats.median_ms), div(f.stats.p90_ms, p.stats.p90_ms),
                       div(f.stats.throughput, p.stats.throughput),
                       div(static_cast<double>(f.peak_rss_bytes), static_cast<double>(p.peak_rss_bytes))});
        break;
      }
  return out;
}

Result<Agreement> compare_outputs(int64_t batch, const std::vector<std::pair<std::string, Tensor>>& ferry,
                                  const std::vector<std::pair<std::string, Tensor>>& peer) {
  Agreement a;
  a.batch = batch;
  auto note = [&](const std::string& p) {
    if (a.problem.empty()) a.problem = p;
  };
  for (const auto& [name, ft] : ferry) {
    const Tensor* pt = nullptr;
    for (const auto& [pn, t] : peer)
      if (pn == name) pt = &t;
    if (!pt) {
      note("the peer has no output '" + name + "'");
      continue;
    }
    if (pt->dims() != ft.dims()) {
      note("output '" + name + "' is " + ft.describe() + " in ferry but " + pt->describe() + " in the peer");
      continue;
    }
    const Tensor& f = ft;  // both plain: session outputs and .npz contents always are
    const Tensor& p = *pt;
    double max_abs = 0, scale = 0;
    int64_t nan_mismatch = 0;
    for (int64_t i = 0; i < f.numel(); ++i) {
      double x = f.as_double(i), y = p.as_double(i);
      if (std::isnan(x) || std::isnan(y)) {
        nan_mismatch += std::isnan(x) != std::isnan(y);
        continue;
      }
      if (std::isinf(x) || std::isinf(y)) {
        if (x != y) nan_mismatch++;
        continue;
      }
      max_abs = std::max(max_abs, std::fabs(x - y));
      scale = std::max(scale, std::fabs(y));
    }
    if (nan_mismatch) note(fmt::format("output '{}' has NaN/Inf on one side only at {} element(s)", name, nan_mismatch));
    double rel = scale > 0 ? max_abs / scale : max_abs;
    ++a.outputs_compared;
    a.max_abs_diff = std::max(a.max_abs_diff, max_abs);
    if (rel >= a.max_rel_diff) {
      a.max_rel_diff = rel;
      a.worst_output = name;
    }
  }
  return a;
}

namespace {

// What every batch of one run shares.
struct BenchContext {
  const BenchOptions& o;
  std::string peer_model;  // the .onnx the peers run
  std::string tmp_dir;     // with peers: where the .npz inputs and outputs go ("" without peers)
  int threads = 0;         // resolved, so ferry and the peers use the same
  bool reset_ok = false;   // the peak-memory reset at the start worked (the kernel allows it)
  void say(const std::string& s) const {
    if (o.progress) o.progress(s);
  }
};

// The report's header; precision, target and rounds are filled in per batch, from the session.
BenchReport start_report(const BenchOptions& o) {
  BenchReport r;
  r.model = o.model;
  r.backend = o.backend;
  r.opt_level = o.opt_level;
  r.precision = runtime::describe_precision(o.precision.mode, o.backend, {0, o.cpu});
  r.threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.warmup = o.warmup;
  r.measure = o.measure;
  r.date_utc = utc_now();
  return r;
}

// Fail before spending minutes on ferry's side when a peer cannot run at all.
Status check_peers(const BenchOptions& o, const std::string& peer_model) {
  if (o.peers.empty()) return Status();
  if (fs::path(peer_model).extension() == ".ferry")
    return Status::invalid("the peers run ONNX models, not " + peer_model +
                           "; pass the original model with --peer-model FILE.onnx");
  for (const std::string& p : o.peers) FERRY_RETURN_IF_ERROR(peer_script(p).status());
  return peer_python().status();
}

// What the measuring steps of one batch share.
struct BatchRun {
  std::string label;  // "batch 8", "model batch"
  int64_t batch = 0;
  runtime::Session* session = nullptr;
  std::string precision;  // the mode that ran (the target's default may apply), for the peers
  std::map<std::string, RtValue> feeds;
  PeerFiles files;       // with peers
  BatchResult result;    // ferry's
  double measured_s = 0; // ferry's measured time over the rounds so far
};

// The warmup loop, not timed: once after loading, and again before each measurement round that follows
// the peers' (a peer's process warms up every round, and ferry's first iterations after one ran on caches
// and threads the peer had taken: efficientnet_b0 batch 1 on AMD Zen 4, 13-18 ms against 7). The first
// iteration of all (one-time costs included) is reported on its own; the rest add to the warmup figures.
Status warm_up(const BenchContext& ctx, BatchRun& b) {
  std::vector<double> warm;
  double seconds = 0;
  Status st = run_loop(*b.session, b.feeds, ctx.o.warmup, warm, seconds, nullptr);
  if (!st.ok()) return st.with_context(ctx.o.model);
  if (b.result.warmup_iterations == 0) b.result.first_run_ms = warm.empty() ? 0 : warm.front();
  b.result.warmup_iterations += static_cast<int64_t>(warm.size());
  b.result.warmup_s += seconds;
  return Status();
}

// One untimed run whose outputs the peers' are compared with.
Status write_ferry_outputs(const BenchContext& ctx, const BatchRun& b) {
  auto outs = b.session->run(b.feeds);
  if (!outs.ok()) return outs.status().with_context(ctx.o.model);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, v] : *outs)
    if (v.is_tensor()) tensors.emplace_back(name, v.tensor);
  return write_npz(b.files.ferry_npz, tensors);
}

// Ferry's share of round `round`, with a progress line at most every 5 s (`last_say` spans the rounds).
Status measure_ferry_round(const BenchContext& ctx, BatchRun& b, int rounds, int round, Clock::time_point& last_say) {
  ctx.say(rounds == 1 ? b.label + ": measuring ..."
                      : fmt::format("{}: measuring, round {} of {} ...", b.label, round + 1, rounds));
  const size_t before = b.result.latencies_ms.size();
  auto tick = [&](int64_t n, double elapsed) {
    if (seconds_since(last_say) < 5) return;
    last_say = Clock::now();
    ctx.say(fmt::format("{}: {} iterations in {:.1f} s, last {:.2f} ms", b.label, static_cast<int64_t>(before) + n,
                        b.measured_s + elapsed, b.result.latencies_ms.back()));
  };
  double round_s = 0;
  Status st = run_loop(*b.session, b.feeds, round_policy(ctx.o.measure, rounds, round), b.result.latencies_ms,
                       round_s, tick);
  if (!st.ok()) return st.with_context(ctx.o.model);
  b.measured_s += round_s;
  return Status();
}

// A peer's share of round `round` (a child process, which warms up each time); after the last round, how
// far its outputs are from ferry's.
Status peer_round(const BenchContext& ctx, const BatchRun& b, const std::string& name, int rounds, int round,
                  PeerResult& into) {
  PeerJob job{name, ctx.peer_model, ctx.threads, ctx.o.warmup, round_policy(ctx.o.measure, rounds, round),
              b.precision, {b.files.peer}};
  job.batches[0].outputs = fmt::format(fmt::runtime(job.batches[0].outputs), name);
  FERRY_ASSIGN_OR_RETURN(PeerResult pr, run_peer(job, ctx.o.progress));
  if (pr.results.size() != 1) return Status::internal("the " + name + " peer returned no result for " + b.label);
  add_peer_round(into, std::move(pr), round == 0);
  if (round + 1 != rounds) return Status();
  auto theirs = read_npz(job.batches[0].outputs);
  auto ours = read_npz(b.files.ferry_npz);
  if (!theirs.ok()) return theirs.status().with_context("the " + name + " peer's outputs");
  if (!ours.ok()) return ours.status();
  FERRY_ASSIGN_OR_RETURN(Agreement ag, compare_outputs(b.batch, *ours, *theirs));
  into.agreement.push_back(std::move(ag));
  return Status();
}

// The rounds alternate ferry and each peer, so a shared machine's drift falls on both sides of a ratio.
Status measure_rounds(const BenchContext& ctx, BatchRun& b, int rounds, std::vector<PeerResult>& peer_results) {
  auto last_say = Clock::now();
  for (int round = 0; round < rounds; ++round) {
    if (round > 0) FERRY_RETURN_IF_ERROR(warm_up(ctx, b));
    FERRY_RETURN_IF_ERROR(measure_ferry_round(ctx, b, rounds, round, last_say));
    for (size_t pi = 0; pi < ctx.o.peers.size(); ++pi)
      FERRY_RETURN_IF_ERROR(peer_round(ctx, b, ctx.o.peers[pi], rounds, round, peer_results[pi]));
  }
  return Status();
}

// The statistics, once a batch's rounds are done, pool each side's rounds; the peak memory is this batch's
// when both resets worked, else the process's.
void finish_batch(const BenchContext& ctx, BatchRun& b, bool scoped, std::vector<PeerResult>& peer_results) {
  b.result.stats = compute_stats(b.result.latencies_ms, b.batch, b.measured_s);
  b.result.peak_rss_bytes = peak_rss_bytes();
  b.result.peak_rss_scope = scoped && ctx.reset_ok ? "batch" : "process";
  for (PeerResult& p : peer_results) {
    BatchResult& pb = p.results.back();
    pb.stats = compute_stats(pb.latencies_ms, pb.batch, pb.stats.total_s);
  }
}

// One batch: load, inputs, warmup, then the measurement rounds; appends ferry's result to `r` and each
// peer's to `peer_results`.
Status bench_batch(const BenchContext& ctx, std::optional<int64_t> want, BenchReport& r,
                   std::vector<PeerResult>& peer_results) {
  BatchRun b;
  b.label = want ? fmt::format("batch {}", *want) : std::string("model batch");
  // Freed memory of the previous batch's session goes back to the system before the peak is reset,
  // so each batch's peak counts this batch only (plus the process's baseline).
  ::malloc_trim(0);
  const bool scoped = reset_peak_rss();
  ctx.say(b.label + ": loading " + ctx.o.model + " ...");
  auto t0 = Clock::now();
  FERRY_ASSIGN_OR_RETURN(BatchModel m, load_batch_model(ctx.o, want, ctx.threads));
  r.precision = m.first().precision_description();  // the target's default may apply
  r.target = m.first().target_label();
  r.cpu_kernels = backends::to_string(m.first().options().backend_options.cpu);  // a .ferry file's own choices too
  b.precision = passes::to_string(m.first().precision_report().mode);
  b.batch = m.batch;
  b.result.batch = m.batch;
  b.result.load_s = seconds_since(t0);

  FERRY_ASSIGN_OR_RETURN(BatchInputs inputs, prepare_batch_inputs(ctx.o, m, want, b.result));
  b.feeds = std::move(inputs.feeds);
  if (!ctx.tmp_dir.empty()) {
    FERRY_ASSIGN_OR_RETURN(b.files, write_peer_inputs(ctx.tmp_dir, b.batch, r.results.size(), inputs.arrays));
  }
  FERRY_ASSIGN_OR_RETURN(b.session, session_for_batch(m, b.feeds, ctx.o.model));
  ctx.say(fmt::format("{}: loaded in {:.2f} s; warming up ...", b.label, b.result.load_s));
  FERRY_RETURN_IF_ERROR(warm_up(ctx, b));
  if (!ctx.tmp_dir.empty()) FERRY_RETURN_IF_ERROR(write_ferry_outputs(ctx, b));

  const int rounds = ctx.o.peers.empty() ? 1 : effective_rounds(ctx.o.measure, ctx.o.rounds);
  r.rounds = rounds;
  FERRY_RETURN_IF_ERROR(measure_rounds(ctx, b, rounds, peer_results));
  finish_batch(ctx, b, scoped, peer_results);
  ctx.say(fmt::format("{}: median {:.3f} ms over {} iterations", b.label, b.result.stats.median_ms,
                      b.result.stats.iterations));
  r.results.push_back(std::move(b.result));
  return Status();
}

}  // namespace

Result<BenchReport> run_bench(const BenchOptions& o) {
  BenchReport r = start_report(o);
  BenchContext ctx{o, o.peer_model.empty() ? o.model : o.peer_model};
  FERRY_RETURN_IF_ERROR(check_peers(o, ctx.peer_model));
  TempDir tmp;
  if (!o.peers.empty()) {
    FERRY_ASSIGN_OR_RETURN(tmp.path, make_temp_dir());
  }
  ctx.tmp_dir = tmp.path;
  ctx.threads = r.threads;
  std::vector<PeerResult> peer_results(o.peers.size());

  // No --batch: one run at the model's own batch.
  std::vector<std::optional<int64_t>> batches;
  for (int64_t b : o.batches) batches.push_back(b);
  if (batches.empty()) batches.push_back(std::nullopt);
  ctx.reset_ok = reset_peak_rss();

  for (const std::optional<int64_t>& want : batches) FERRY_RETURN_IF_ERROR(bench_batch(ctx, want, r, peer_results));
  r.peers = std::move(peer_results);
  return r;
}

}  // namespace ferry::tools
