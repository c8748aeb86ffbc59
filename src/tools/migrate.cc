#include "tools/migrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/text_file.h"
#include "frontend/onnx/import.h"
#include "passes/precision.h"
#include "runtime/executor.h"
#include "targets/target.h"
#include "tools/bench.h"
#include "tools/check.h"
#include "tools/compare/compare.h"
#include "tools/compile.h"
#include "tools/doctor.h"
#include "runtime/model_session.h"
#include "tools/migrate_internal.h"
#include "tools/profile.h"
#include "tools/tune_precision.h"

namespace ferry::tools {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Finite numbers only in the report: NaN/Inf become null (JSON has no NaN).
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string quote(const std::string& s) {
  if (s.find_first_of(" '\"$\\") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

json compare_json(const compare::CompareReport& c) {
  json j = compare::report_to_json(c);
  // The plot needs the layer rows only: keep the report small and the numbers finite.
  json layers = json::array();
  for (const compare::Row& r : c.layers) {
    json row = {{"tensor", r.tensor}, {"node", r.onnx_node.empty() ? r.candidate_node : r.onnx_node},
                {"op", r.op_type}, {"pass", r.pass()}};
    if (r.metrics) {
      row["cosine"] = num(r.metrics->cosine);
      row["max_abs"] = num(r.metrics->max_abs);
      row["nonfinite"] = r.metrics->candidate_nan + r.metrics->candidate_inf;
    }
    layers.push_back(row);
  }
  json out = {{"pass", c.pass()}, {"layers", layers}, {"outputs", j.value("outputs", json::array())},
              {"advisor", j.value("advisor", json::array())}, {"golden", c.golden}, {"candidate", c.candidate}};
  out["first_divergent_node"] = j.value("first_divergent_node", json(nullptr));
  out["first_divergent_tensor"] = j.value("first_divergent_tensor", json(nullptr));
  return out;
}

// What the stages of one migrate run share: the options, the resolved target and precision, the inputs
// written once, the compile request (tune-precision recompiles with it) and what the stages found.
struct MigrateRun {
  MigrateRun(const MigrateOptions& opts, MigrateResult& result) : o(opts), res(result), rep(result.report) {}
  const MigrateOptions& o;
  MigrateResult& res;
  json& rep;
  targets::Target target;
  std::string precision;  // the mode's name: asked for, or the target's default
  passes::PrecisionMode mode = passes::PrecisionMode::kFp32;
  MetricGoal goal;
  std::string out, inputs_dir, ferry_file, model_q, shape_flags, compile_cmd;
  std::map<std::string, std::vector<int64_t>> shapes;
  InputOptions from_dir;          // the written inputs, and their shapes, for every stage
  runtime::SessionOptions cand;   // the candidate's session (the target's backend)
  CompileRequest req;
  bool blocked = false, fallbacks = false, compared = false, accurate = false;
  std::string compare_summary;  // the outputs against the metric, for the compare stage's line

  void stage(const std::string& name, const std::string& status, const std::string& summary, double secs,
             const std::string& cmd) {
    res.stages.push_back({name, status, summary, secs, cmd});
    if (o.progress) o.progress(fmt::format("[{}] {}: {}", status, name, summary));
  }
  void failed(const std::string& name, const Status& why, double secs, const std::string& cmd) {
    stage(name, "failed", why.to_string(), secs, cmd);
    record_failure(res, name, why);
  }
};

// The target, the precision and the metric, into the report.
Status resolve_run(MigrateRun& r) {
  const MigrateOptions& o = r.o;
  r.rep["schema"] = "ferry.migrate/1";
  r.rep["model"] = o.model;
  std::error_code ec;
  fs::create_directories(o.outdir, ec);
  if (ec) return Status::io("cannot create the output folder '" + o.outdir + "': " + ec.message());
  r.out = fs::path(o.outdir).string();
  FERRY_ASSIGN_OR_RETURN(r.target, targets::load_target(o.target));
  r.precision = o.precision.empty() ? r.target.default_precision : o.precision;
  FERRY_ASSIGN_OR_RETURN(r.mode, passes::parse_precision(r.precision));
  r.rep["target"] = {{"name", r.target.name}, {"emulated", r.target.emulated}, {"backend", r.target.backend},
                     {"default_precision", r.target.default_precision}};
  r.rep["precision"] = {{"mode", r.precision}, {"description", runtime::describe_precision(r.mode, r.target.backend)},
                        {"atc", passes::atc_equivalent(r.mode)}};
  FERRY_ASSIGN_OR_RETURN(r.goal, parse_metric_goal(o.metric));
  r.rep["metric"] = r.goal.text();
  r.cand.backend = r.target.backend;
  r.cand.backend_options.threads = o.threads;
  r.model_q = quote(o.model);
  r.ferry_file = (fs::path(r.out) / "model.ferry").string();
  return Status();
}

// The inputs every stage uses, written once so each stage (and each reproduce command) reads the same.
Status write_inputs(MigrateRun& r) {
  const MigrateOptions& o = r.o;
  FERRY_ASSIGN_OR_RETURN(auto original, runtime::open_model(o.model));
  InputOptions io = o.inputs;
  if (o.batch > 0)
    for (const ir::Value* v : original->graph->inputs) {
      if (v->is_constant() || io.shapes.count(v->name) || io.files.count(v->name) || !v->shape || v->shape->empty()) continue;
      std::vector<int64_t> d;
      for (const Dim& x : *v->shape) d.push_back(x.is_static() ? x.value : 1);
      d[0] = o.batch;
      io.shapes[v->name] = d;
    }
  FERRY_ASSIGN_OR_RETURN(auto prepared, prepare_inputs(*original->graph, io));
  r.inputs_dir = (fs::path(r.out) / "inputs").string();
  std::error_code ec;
  fs::create_directories(r.inputs_dir, ec);
  for (const PreparedInput& p : prepared) {
    FERRY_RETURN_IF_ERROR(write_npy((fs::path(r.inputs_dir) / (sanitize_name(p.name) + ".npy")).string(), p.tensor));
    r.shapes[p.name] = p.tensor.dims();
  }
  r.from_dir.inputs_path = r.inputs_dir;
  r.from_dir.shapes = r.shapes;  // every stage prepares the model for these shapes (bench's baseline too)
  for (const auto& [n, d] : r.shapes) {
    std::string dims;
    for (int64_t x : d) dims += (dims.empty() ? "" : ",") + std::to_string(x);
    r.shape_flags += " --input-shape " + quote(n + ":" + dims);
  }
  return Status();
}

void stage_doctor(MigrateRun& r) {
  const auto t = Clock::now();
  DoctorReport doc = run_doctor();
  r.rep["doctor"] = doctor_to_json(doc);
  r.stage("doctor", doc.problems() ? "warning" : "ok",
          doc.problems() ? fmt::format("{} problem(s), see the report", doc.problems()) : "this machine has what ferry needs",
          since(t), "ferry doctor");
}

void stage_check(MigrateRun& r) {
  const auto t = Clock::now();
  CheckOptions co;
  co.target = r.o.target;
  co.input_shapes = r.shapes;
  auto check = check_model(r.o.model, co);
  const std::string cmd = "ferry check " + r.model_q + " --target " + r.o.target;
  if (!check.ok()) {
    r.failed("check", check.status(), since(t), cmd);
    r.rep["check"] = {{"error", check.status().to_string()}};
    return;
  }
  r.rep["check"] = check_to_json(*check);
  r.blocked = check->unsupported > 0;
  r.fallbacks = check->host > 0;
  r.stage("check", r.blocked ? "failed" : (r.fallbacks || check->rewritten ? "warning" : "ok"),
          fmt::format("{} node(s): {} on the device, {} rewritten, {} host fallback, {} unsupported", check->rows.size(),
                      check->device, check->rewritten, check->host, check->unsupported),
          since(t), cmd);
}

// False when the model does not compile: every later stage works on the compiled model.
bool stage_compile(MigrateRun& r) {
  const auto t = Clock::now();
  r.req.model_path = r.o.model;
  r.req.output_path = r.ferry_file;
  r.req.prepare.input_shapes = r.shapes;
  r.req.prepare.precision.mode = r.mode;
  r.req.prepare.target = r.o.target;
  r.req.prepare.precision_given = true;  // `mode` is the asked-for precision or the target's default already
  r.compile_cmd = "ferry compile " + r.model_q + " -o " + quote(r.ferry_file) + r.shape_flags + " --target " +
                  quote(r.o.target) + " --precision " + r.precision;
  auto compiled = compile_model(r.req);
  if (!compiled.ok()) {
    r.failed("compile", compiled.status(), since(t), r.compile_cmd);
    skip_remaining(r.res, "compile");
    return false;
  }
  r.res.ferry_file = r.ferry_file;
  r.rep["compile"] = {{"file", r.ferry_file}, {"nodes_before", compiled->nodes_before},
                      {"nodes_after", compiled->nodes_after}, {"weight_bytes", compiled->weight_bytes},
                      {"low_precision_nodes", compiled->prepared.precision.low_nodes}};
  r.stage("compile", "ok",
          fmt::format("{} -> {} nodes, {} low-precision node(s), {:.1f} MiB", compiled->nodes_before,
                      compiled->nodes_after, compiled->prepared.precision.low_nodes, compiled->file_size / 1048576.0),
          since(t), r.compile_cmd);
  return true;
}

// The fp32 reference golden against the compiled model under the target's numerics; into the report.
Status compare_compiled(MigrateRun& r) {
  compare::CompareOptions c;
  c.model = r.ferry_file;
  c.candidate = r.cand;
  c.golden = {compare::GoldenSpec::Kind::kModel, r.o.model};
  c.inputs = r.from_dir;
  c.layerwise = true;
  if (r.goal.metric == "cosine") c.thresholds.cosine_min = r.goal.value;
  auto cmp = compare::run_compare(c);
  r.compared = cmp.ok();
  if (!cmp.ok()) return cmp.status();
  r.rep["compare"] = compare_json(*cmp);
  r.accurate = cmp->pass();
  r.compare_summary = outputs_summary(cmp->outputs, r.accurate, r.goal);
  return Status();
}

void stage_compare(MigrateRun& r) {
  const auto t = Clock::now();
  compare::Thresholds th;
  if (r.goal.metric == "cosine") th.cosine_min = r.goal.value;
  const std::string cmd = "ferry compare " + quote(r.ferry_file) + " --golden " + r.model_q + " --inputs " +
                          quote(r.inputs_dir) + " --layerwise --cosine " + fmt::format("{}", th.cosine_min);
  Status st = compare_compiled(r);
  if (!st.ok()) {
    r.failed("compare", st, since(t), cmd);
    return;
  }
  r.stage("compare", r.accurate ? "ok" : "warning", r.compare_summary, since(t), cmd);
}

// A keep-fp32 list when the metrics missed and --auto-precision asks for one; the model is recompiled
// with it and compared again.
Status stage_tune(MigrateRun& r) {
  const auto t = Clock::now();
  const std::string keep_file = (fs::path(r.out) / "keep.txt").string();
  const std::string cmd = "ferry tune-precision " + r.model_q + " --precision " + r.precision + " --inputs " +
                          quote(r.inputs_dir) + " --metric " + quote(r.goal.text()) + " -o " + quote(keep_file);
  const passes::PrecisionMode m = r.mode;
  if (r.accurate || !r.compared) {
    r.stage("tune-precision", "skipped", r.accurate ? "not needed: the metrics are met" : "compare did not run", 0, cmd);
    return Status();
  }
  if (!passes::is_low(m) || m == passes::PrecisionMode::kMixedFp16 || m == passes::PrecisionMode::kMixedBf16) {
    r.stage("tune-precision", "skipped", "searches fp16/bf16 models only; this run is " + r.precision, 0, cmd);
    return Status();
  }
  if (!r.o.auto_precision) {
    r.stage("tune-precision", "skipped", "metrics missed: run with --auto-precision to search a keep-fp32 list", 0, cmd);
    return Status();
  }
  TuneOptions to;
  to.model = r.o.model;
  to.session = r.cand;
  to.session.opt_level = 2;
  to.session.precision.mode = m;
  to.session.input_shapes = r.shapes;
  to.inputs = r.from_dir;
  to.goal = r.goal;
  to.progress = r.o.progress;
  auto tuned = tune_precision(to);
  if (!tuned.ok()) {
    r.failed("tune-precision", tuned.status(), since(t), cmd);
    return Status();
  }
  r.rep["tune"] = tune_report_to_json(*tuned);
  FERRY_RETURN_IF_ERROR(write_text_file(keep_file, keep_list_text(*tuned)));
  r.req.prepare.precision.keep_fp32_file = keep_file;
  if (compile_model(r.req).ok()) (void)compare_compiled(r);  // the stage line below says how it went
  r.compile_cmd += " --keep-fp32 " + quote(keep_file);
  r.stage("tune-precision", tuned->pass && r.accurate ? "ok" : "warning",
          fmt::format("{} node(s) kept in fp32 after {} evaluation(s); {}", tuned->keep.size(), tuned->evaluations.size(),
                      r.accurate ? "the recompiled model meets " + r.goal.text() : "still below " + r.goal.text()),
          since(t), cmd);
  return Status();
}

// The compiled model, and the fp32 .onnx on the cpu backend as the baseline.
void stage_bench(MigrateRun& r) {
  const auto t = Clock::now();
  BenchOptions bo;
  bo.model = r.ferry_file;
  bo.peer_model = r.o.model;
  bo.threads = r.o.threads;
  bo.backend = r.target.backend;
  bo.inputs = r.from_dir;
  bo.warmup = warmup_iterations_policy(2);
  bo.measure = measure_policy(10, std::nullopt);
  const std::string cmd = "ferry bench " + quote(r.ferry_file) + " --inputs " + quote(r.inputs_dir) + " --iterations 10";
  auto bench = run_bench(bo);
  BenchOptions base = bo;
  base.model = r.o.model;
  base.backend = "cpu";
  base.opt_level = 2;
  if (bench.ok() && !bench->results.empty()) base.batches = {bench->results.front().batch};
  auto baseline = run_bench(base);
  if (!bench.ok() || bench->results.empty()) {
    r.failed("bench", bench.ok() ? Status::internal("the benchmark returned no result") : bench.status(), since(t), cmd);
    return;
  }
  const BatchResult& b = bench->results.front();
  json bj = {{"batch", b.batch}, {"median_ms", num(b.stats.median_ms)}, {"p90_ms", num(b.stats.p90_ms)},
             {"min_ms", num(b.stats.min_ms)}, {"max_ms", num(b.stats.max_ms)}, {"cv", num(b.stats.cv)},
             {"throughput", num(b.stats.throughput)}, {"peak_rss_bytes", b.peak_rss_bytes},
             {"latencies_ms", b.latencies_ms}, {"threads", bench->threads}};
  std::string speed;
  if (!baseline.ok()) speed = ", no fp32 baseline: " + baseline.status().to_string();
  if (baseline.ok() && !baseline->results.empty()) {
    const double bm = baseline->results.front().stats.median_ms;
    bj["baseline_fp32_median_ms"] = num(bm);
    bj["speedup_vs_fp32"] = num(bm / b.stats.median_ms);
    speed = fmt::format(", {:.2f}x the fp32 baseline ({:.3f} ms){}", bm / b.stats.median_ms, bm,
                        r.target.emulated ? " (emulated: CPU timings, not the device's)" : "");
  }
  const bool unstable = b.stats.cv > kUnstableCv;
  bj["unstable"] = unstable;
  if (unstable)  // the figures are not worth reading as they are: say so where the reader looks
    speed += fmt::format("; UNSTABLE (CV {:.0f}%: other load on this machine; rerun `ferry bench --duration 10`)",
                         100 * b.stats.cv);
  r.rep["bench"] = bj;
  r.stage("bench", "ok", fmt::format("median {:.3f} ms at batch {}{}", b.stats.median_ms, b.batch, speed), since(t), cmd);
}

Status stage_profile(MigrateRun& r) {
  const auto t = Clock::now();
  ProfileOptions pf;
  pf.model = r.ferry_file;
  pf.session = r.cand;
  pf.session.input_shapes = r.shapes;
  pf.inputs = r.from_dir;
  pf.runs = 3;
  pf.warmup = 1;
  auto profiled = run_profile(pf);
  const std::string trace = (fs::path(r.out) / "trace.json").string();
  const std::string cmd = "ferry profile " + quote(r.ferry_file) + " --inputs " + quote(r.inputs_dir) + " --trace " + quote(trace);
  if (!profiled.ok()) {
    r.failed("profile", profiled.status(), since(t), cmd);
    return Status();
  }
  FERRY_RETURN_IF_ERROR(write_text_file(trace, profile_to_trace(*profiled).dump()));
  const json prof = profile_to_json(*profiled);
  r.rep["profile"] = prof;
  std::string top;
  const json& types = prof["by_type"];
  for (size_t i = 0; i < types.size() && i < 3; ++i)
    top += fmt::format("{}{} {:.0f}%", i ? ", " : "", types[i]["op"].get<std::string>(), 100 * types[i]["share"].get<double>());
  r.stage("profile", "ok", "time by op type: " + top, since(t), cmd);
  return Status();
}

// The stages, in order, into res. An error returned before the first stage (options, the model, its inputs)
// leaves res.stages empty; a stage that cannot run is recorded (record_failure) and the run goes on where the
// later stages can do without it.
Status migrate_stages(const MigrateOptions& o, MigrateResult& res) {
  MigrateRun r(o, res);
  FERRY_RETURN_IF_ERROR(resolve_run(r));
  FERRY_RETURN_IF_ERROR(write_inputs(r));
  stage_doctor(r);
  stage_check(r);
  if (!stage_compile(r)) return Status();
  stage_compare(r);
  FERRY_RETURN_IF_ERROR(stage_tune(r));
  stage_bench(r);
  FERRY_RETURN_IF_ERROR(stage_profile(r));
  res.verdict = r.blocked ? "blocked"
                          : (!r.accurate ? "accuracy below threshold" : (r.fallbacks ? "ready with fallbacks" : "ready"));
  return Status();
}

}  // namespace

Result<MigrateResult> run_migrate(const MigrateOptions& o) {
  MigrateResult res;
  Status st;
  // Every stage opens the model: it is read and imported once, the other stages get copies.
  frontend::ImportCache import_cache;
  const int64_t imports_before = frontend::onnx_files_imported();
  try {
    st = migrate_stages(o, res);
  } catch (const std::exception& e) {
    // A bug in ferry, not a property of the model; it is still reported against the stage that was running,
    // with what the stages before it found.
    st = Status::internal(std::string("stopped on an unexpected error (a bug in ferry; please report it): ") + e.what());
  }
  if (res.stages.empty()) return st;  // nothing ran (options, a model that cannot be opened): no report to write
  if (!st.ok()) {  // a stage stopped on an error it returned or threw: name it, skip the rest
    const std::string running = next_stage(res);
    res.stages.push_back({running, "failed", st.to_string(), 0, ""});
    if (o.progress) o.progress(fmt::format("[failed] {}: {}", running, st.to_string()));
    record_failure(res, running, st);
    skip_remaining(res, running);
  }
  if (!res.failure.ok()) res.verdict = "failed";  // whatever the stages that ran found
  res.report["model_imports"] = frontend::onnx_files_imported() - imports_before;
  FERRY_RETURN_IF_ERROR(write_migrate_report(res, o.outdir));
  return res;
}

std::string format_migrate_summary(const MigrateResult& r) {
  const json& j = r.report;
  std::string s = fmt::format("\nferry migrate: {} -> {} ({}), precision {}\n", j["model"].get<std::string>(),
                              j["target"]["name"].get<std::string>(),
                              j["target"]["emulated"].get<bool>() ? "emulated on this CPU" : "local",
                              j["precision"]["description"].get<std::string>());
  s += fmt::format("verdict: {}\n", r.verdict);
  for (const auto& st : r.stages) s += fmt::format("  {:<15} {:<8} {}\n", st.name, st.status, st.summary);
  if (j.contains("compare") && !j["compare"]["first_divergent_node"].is_null())
    s += fmt::format("worst layer: first divergent node {}\n", j["compare"]["first_divergent_node"].dump());
  std::string files;
  for (const std::string& f : {r.ferry_file, r.report_json, r.report_html})
    if (!f.empty()) files += (files.empty() ? "" : ", ") + f;
  s += "wrote " + files + "\n";
  return s;
}

}  // namespace ferry::tools
