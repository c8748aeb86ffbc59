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
#include "frontend/onnx/import.h"
#include "runtime/session.h"
#include "runtime/model_session.h"

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

Result<BenchReport> run_bench(const BenchOptions& o) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  BenchReport r;
  r.model = o.model;
  r.backend = o.backend;
  r.opt_level = o.opt_level;
  r.precision = runtime::describe_precision(o.precision.mode, o.backend, {0, o.cpu});
  r.threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.warmup = o.warmup;
  r.measure = o.measure;
  r.date_utc = utc_now();

  std::string peer_model = o.peer_model.empty() ? o.model : o.peer_model;
  if (!o.peers.empty()) {
    if (fs::path(peer_model).extension() == ".ferry")
      return Status::invalid("the peers run ONNX models, not " + peer_model +
                             "; pass the original model with --peer-model FILE.onnx");
    // Fail before spending minutes on ferry's side when a peer cannot run at all.
    for (const std::string& p : o.peers) FERRY_RETURN_IF_ERROR(peer_script(p).status());
    FERRY_RETURN_IF_ERROR(peer_python().status());
  }

  TempDir tmp;
  if (!o.peers.empty()) {
    FERRY_ASSIGN_OR_RETURN(tmp.path, make_temp_dir());
  }
  std::vector<PeerResult> peer_results(o.peers.size());

  std::vector<std::optional<int64_t>> batches;
  for (int64_t b : o.batches) batches.push_back(b);
  if (batches.empty()) batches.push_back(std::nullopt);
  const bool reset_ok = reset_peak_rss();

  for (const std::optional<int64_t>& want : batches) {
    std::string label = want ? fmt::format("batch {}", *want) : std::string("model batch");
    // Freed memory of the previous batch's session goes back to the system before the peak is reset,
    // so each batch's peak counts this batch only (plus the process's baseline).
    ::malloc_trim(0);
    bool scoped = reset_peak_rss();
    say(label + ": loading " + o.model + " ...");
    auto t0 = Clock::now();
    // A .ferry file opens through the model loader (its graph is already optimized; a geared file runs the
    // gear that fits the batch); an .onnx file is imported and optimized for this batch's shapes.
    const bool ferry_file = runtime::detect_model_file(o.model) == runtime::ModelFileKind::kFerry;
    frontend::ImportOptions import;
    import.allow_newer_opset = o.allow_newer_opset;
    auto model = runtime::open_model(o.model, import);
    if (!model.ok()) return model.status();
    auto shapes = resolve_batch_shapes(*(*model)->graph, o.inputs.shapes, want);
    if (!shapes.ok()) return shapes.status();
    int64_t batch = shapes->second;
    runtime::SessionOptions so;
    so.backend = o.backend;
    so.input_shapes = shapes->first;
    so.opt_level = o.opt_level;
    so.precision = o.precision;
    so.target = o.target;
    so.precision_given = o.precision_given;
    so.allow_newer_opset = o.allow_newer_opset;
    so.backend_options.threads = r.threads;
    so.backend_options.cpu = o.cpu;
    std::unique_ptr<runtime::ModelSession> runner;
    std::unique_ptr<runtime::Session> own_session;
    if (ferry_file) {
      model->reset();
      auto opened = runtime::ModelSession::open(o.model, so);
      if (!opened.ok()) return opened.status();
      runner = std::move(opened).value();
    } else {
      auto created = runtime::Session::from_model(std::move(model).value(), so);
      if (!created.ok()) return created.status();
      own_session = std::move(created).value();
    }
    {
      runtime::Session& first = runner ? runner->session(0) : *own_session;
      r.precision = first.precision_description();  // the target's default may apply
      r.target = first.target_label();
    }
    BatchResult br;
    br.batch = batch;
    br.load_s = seconds_since(t0);

    InputOptions io = o.inputs;
    io.shapes = shapes->first;
    // Files keep their own shapes: --shape for a file-fed input is only checked against it.
    for (const auto& [name, file] : io.files) io.shapes.erase(name);
    auto prepared = prepare_inputs(runner ? runner->graph() : own_session->graph(), io);
    if (!prepared.ok()) return prepared.status();
    std::map<std::string, RtValue> feeds;
    std::vector<std::pair<std::string, Tensor>> arrays;
    for (const PreparedInput& in : *prepared) {
      if (want && in.tensor.rank() >= 1 && in.tensor.dims()[0] != *want)
        return Status::invalid("input '" + in.name + "' from " + in.source + " holds " + in.tensor.describe() +
                               ", whose dim 0 is not the batch " + std::to_string(*want));
      br.input_shapes[in.name] = in.tensor.dims();
      feeds.emplace(in.name, RtValue(in.tensor));
      arrays.emplace_back(in.name, in.tensor);
    }
    // With peers: this batch's inputs for them, and where they and ferry put their outputs.
    const size_t batch_index = r.results.size();
    PeerJob::Batch peer_batch;
    std::string ferry_npz;
    if (!tmp.path.empty()) {
      fs::path dir(tmp.path);
      peer_batch = {batch, (dir / fmt::format("inputs_{}.npz", batch_index)).string(),
                    (dir / fmt::format("{{}}_outputs_{}.npz", batch_index)).string()};
      ferry_npz = (dir / fmt::format("ferry_outputs_{}.npz", batch_index)).string();
      FERRY_RETURN_IF_ERROR(write_npz(peer_batch.inputs, arrays));
    }
    runtime::Session* session = own_session.get();
    if (runner) {
      auto which = runner->pick_session(feeds);
      if (!which.ok()) return which.status().with_context(o.model);
      session = &runner->session(*which);
    }
    say(fmt::format("{}: loaded in {:.2f} s; warming up ...", label, br.load_s));

    std::vector<double> warm;
    Status st = run_loop(*session, feeds, o.warmup, warm, br.warmup_s, nullptr);
    if (!st.ok()) return st.with_context(o.model);
    br.warmup_iterations = static_cast<int64_t>(warm.size());
    br.first_run_ms = warm.empty() ? 0 : warm.front();

    if (!tmp.path.empty()) {
      // One untimed run whose outputs the peers' are compared with.
      auto outs = session->run(feeds);
      if (!outs.ok()) return outs.status().with_context(o.model);
      std::vector<std::pair<std::string, Tensor>> tensors;
      for (auto& [name, v] : *outs)
        if (v.is_tensor()) tensors.emplace_back(name, v.tensor);
      FERRY_RETURN_IF_ERROR(write_npz(ferry_npz, tensors));
    }

    const int rounds = o.peers.empty() ? 1 : effective_rounds(o.measure, o.rounds);
    r.rounds = rounds;
    auto last_say = Clock::now();
    double measured_s = 0;
    for (int round = 0; round < rounds; ++round) {
      say(rounds == 1 ? label + ": measuring ..." : fmt::format("{}: measuring, round {} of {} ...", label, round + 1, rounds));
      const size_t before = br.latencies_ms.size();
      auto tick = [&](int64_t n, double elapsed) {
        if (seconds_since(last_say) < 5) return;
        last_say = Clock::now();
        say(fmt::format("{}: {} iterations in {:.1f} s, last {:.2f} ms", label, static_cast<int64_t>(before) + n,
                        measured_s + elapsed, br.latencies_ms.back()));
      };
      double round_s = 0;
      st = run_loop(*session, feeds, round_policy(o.measure, rounds, round), br.latencies_ms, round_s, tick);
      if (!st.ok()) return st.with_context(o.model);
      measured_s += round_s;
      for (size_t pi = 0; pi < o.peers.size(); ++pi) {
        const std::string& name = o.peers[pi];
        PeerJob job{name, peer_model, r.threads, o.warmup, round_policy(o.measure, rounds, round), {peer_batch}};
        job.batches[0].outputs = fmt::format(fmt::runtime(job.batches[0].outputs), name);
        FERRY_ASSIGN_OR_RETURN(PeerResult pr, run_peer(job, o.progress));
        if (pr.results.size() != 1) return Status::internal("the " + name + " peer returned no result for " + label);
        add_peer_round(peer_results[pi], std::move(pr), round == 0);
        if (round + 1 == rounds) {
          auto theirs = read_npz(job.batches[0].outputs);
          auto ours = read_npz(ferry_npz);
          if (!theirs.ok()) return theirs.status().with_context("the " + name + " peer's outputs");
          if (!ours.ok()) return ours.status();
          FERRY_ASSIGN_OR_RETURN(Agreement ag, compare_outputs(batch, *ours, *theirs));
          peer_results[pi].agreement.push_back(std::move(ag));
        }
      }
    }
    br.stats = compute_stats(br.latencies_ms, batch, measured_s);
    br.peak_rss_bytes = peak_rss_bytes();
    br.peak_rss_scope = scoped && reset_ok ? "batch" : "process";
    for (PeerResult& p : peer_results) {
      BatchResult& pb = p.results.back();
      pb.stats = compute_stats(pb.latencies_ms, pb.batch, pb.stats.total_s);
    }
    say(fmt::format("{}: median {:.3f} ms over {} iterations", label, br.stats.median_ms, br.stats.iterations));
    r.results.push_back(std::move(br));
  }

  r.peers = std::move(peer_results);
  return r;
}

}  // namespace ferry::tools
