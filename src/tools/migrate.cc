#include "tools/migrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/npy.h"
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

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return Status::io("cannot write '" + path + "'");
  return Status();
}

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

// The stages, in order, into res. An error returned before the first stage (options, the model, its inputs)
// leaves res.stages empty; a stage that cannot run is recorded (record_failure) and the run goes on where the
// later stages can do without it.
Status migrate_stages(const MigrateOptions& o, MigrateResult& res) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  json& rep = res.report;
  rep["schema"] = "ferry.migrate/1";
  rep["model"] = o.model;
  std::error_code ec;
  fs::create_directories(o.outdir, ec);
  if (ec) return Status::io("cannot create the output folder '" + o.outdir + "': " + ec.message());
  const std::string out = fs::path(o.outdir).string();
  FERRY_ASSIGN_OR_RETURN(targets::Target target, targets::load_target(o.target));
  const std::string precision = o.precision.empty() ? target.default_precision : o.precision;
  FERRY_ASSIGN_OR_RETURN(passes::PrecisionMode mode, passes::parse_precision(precision));
  rep["target"] = {{"name", target.name}, {"emulated", target.emulated}, {"backend", target.backend},
                   {"default_precision", target.default_precision}};
  rep["precision"] = {{"mode", precision}, {"description", runtime::describe_precision(mode, target.backend)},
                      {"atc", passes::atc_equivalent(mode)}};
  FERRY_ASSIGN_OR_RETURN(MetricGoal goal, parse_metric_goal(o.metric));
  rep["metric"] = goal.text();
  auto stage = [&](const std::string& name, const std::string& status, const std::string& summary, double secs,
                   const std::string& cmd) {
    res.stages.push_back({name, status, summary, secs, cmd});
    say(fmt::format("[{}] {}: {}", status, name, summary));
  };
  auto failed = [&](const std::string& name, const Status& why, double secs, const std::string& cmd) {
    stage(name, "failed", why.to_string(), secs, cmd);
    record_failure(res, name, why);
  };

  // The inputs every stage uses, written once so each stage (and each reproduce command) reads the same.
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
  const std::string inputs_dir = (fs::path(out) / "inputs").string();
  fs::create_directories(inputs_dir, ec);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const PreparedInput& p : prepared) {
    FERRY_RETURN_IF_ERROR(write_npy((fs::path(inputs_dir) / (sanitize_name(p.name) + ".npy")).string(), p.tensor));
    shapes[p.name] = p.tensor.dims();
  }
  InputOptions from_dir;
  from_dir.inputs_path = inputs_dir;
  from_dir.shapes = shapes;  // every stage prepares the model for these shapes (bench's baseline too)
  std::string shape_flags;
  for (const auto& [n, d] : shapes) {
    std::string dims;
    for (int64_t x : d) dims += (dims.empty() ? "" : ",") + std::to_string(x);
    shape_flags += " --input-shape " + quote(n + ":" + dims);
  }
  const std::string model_q = quote(o.model), ferry_file = (fs::path(out) / "model.ferry").string();

  // 1. doctor
  auto t = Clock::now();
  DoctorReport doc = run_doctor();
  rep["doctor"] = doctor_to_json(doc);
  stage("doctor", doc.problems() ? "warning" : "ok",
        doc.problems() ? fmt::format("{} problem(s), see the report", doc.problems()) : "this machine has what ferry needs",
        since(t), "ferry doctor");

  // 2. check
  t = Clock::now();
  CheckOptions co;
  co.target = o.target;
  co.input_shapes = shapes;
  auto check = check_model(o.model, co);
  bool blocked = false, fallbacks = false;
  if (!check.ok()) {
    failed("check", check.status(), since(t), "ferry check " + model_q + " --target " + o.target);
    rep["check"] = {{"error", check.status().to_string()}};
  } else {
    rep["check"] = check_to_json(*check);
    blocked = check->unsupported > 0;
    fallbacks = check->host > 0;
    stage("check", blocked ? "failed" : (fallbacks || check->rewritten ? "warning" : "ok"),
          fmt::format("{} node(s): {} on the device, {} rewritten, {} host fallback, {} unsupported", check->rows.size(),
                      check->device, check->rewritten, check->host, check->unsupported),
          since(t), "ferry check " + model_q + " --target " + o.target);
  }

  // 3. compile
  t = Clock::now();
  CompileRequest req;
  req.model_path = o.model;
  req.output_path = ferry_file;
  req.prepare.input_shapes = shapes;
  req.prepare.precision.mode = mode;
  req.prepare.target = o.target;
  req.prepare.precision_given = true;  // `mode` is the asked-for precision or the target's default already
  std::string compile_cmd = "ferry compile " + model_q + " -o " + quote(ferry_file) + shape_flags + " --target " +
                            quote(o.target) + " --precision " + precision;
  auto compiled = compile_model(req);
  if (!compiled.ok()) {
    failed("compile", compiled.status(), since(t), compile_cmd);
    skip_remaining(res, "compile");  // every later stage works on the compiled model
    return Status();
  }
  res.ferry_file = ferry_file;
  rep["compile"] = {{"file", ferry_file}, {"nodes_before", compiled->nodes_before}, {"nodes_after", compiled->nodes_after},
                    {"weight_bytes", compiled->weight_bytes}, {"low_precision_nodes", compiled->prepared.precision.low_nodes}};
  stage("compile", "ok",
        fmt::format("{} -> {} nodes, {} low-precision node(s), {:.1f} MiB", compiled->nodes_before, compiled->nodes_after,
                    compiled->prepared.precision.low_nodes, compiled->file_size / 1048576.0),
        since(t), compile_cmd);

  // 4. compare (fp32 reference golden vs the compiled model under the target's numerics)
  runtime::SessionOptions cand;
  cand.backend = target.backend;
  cand.backend_options.threads = o.threads;
  compare::Thresholds th;
  if (goal.metric == "cosine") th.cosine_min = goal.value;
  auto run_cmp = [&](const std::string& file) {
    compare::CompareOptions c;
    c.model = file;
    c.candidate = cand;
    c.golden = {compare::GoldenSpec::Kind::kModel, o.model};
    c.inputs = from_dir;
    c.layerwise = true;
    c.thresholds = th;
    return compare::run_compare(c);
  };
  t = Clock::now();
  std::string compare_cmd = "ferry compare " + quote(ferry_file) + " --golden " + model_q + " --inputs " +
                            quote(inputs_dir) + " --layerwise --cosine " + fmt::format("{}", th.cosine_min);
  auto cmp = run_cmp(ferry_file);
  bool accurate = false;
  if (!cmp.ok()) {
    failed("compare", cmp.status(), since(t), compare_cmd);
  } else {
    rep["compare"] = compare_json(*cmp);
    accurate = cmp->pass();
    stage("compare", accurate ? "ok" : "warning", outputs_summary(cmp->outputs, accurate, goal), since(t), compare_cmd);
  }

  // 5. tune-precision
  t = Clock::now();
  const std::string keep_file = (fs::path(out) / "keep.txt").string();
  std::string tune_cmd = "ferry tune-precision " + model_q + " --precision " + precision + " --inputs " +
                         quote(inputs_dir) + " --metric " + quote(goal.text()) + " -o " + quote(keep_file);
  if (accurate || !cmp.ok()) {
    stage("tune-precision", "skipped", accurate ? "not needed: the metrics are met" : "compare did not run", 0, tune_cmd);
  } else if (!passes::is_low(mode) || mode == passes::PrecisionMode::kMixedFp16 || mode == passes::PrecisionMode::kMixedBf16) {
    stage("tune-precision", "skipped", "searches fp16/bf16 models only; this run is " + precision, 0, tune_cmd);
  } else if (!o.auto_precision) {
    stage("tune-precision", "skipped", "metrics missed: run with --auto-precision to search a keep-fp32 list", 0, tune_cmd);
  } else {
    TuneOptions to;
    to.model = o.model;
    to.session = cand;
    to.session.opt_level = 2;
    to.session.precision.mode = mode;
    to.session.input_shapes = shapes;
    to.inputs = from_dir;
    to.goal = goal;
    to.progress = o.progress;
    auto tuned = tune_precision(to);
    if (!tuned.ok()) {
      failed("tune-precision", tuned.status(), since(t), tune_cmd);
    } else {
      rep["tune"] = tune_report_to_json(*tuned);
      FERRY_RETURN_IF_ERROR(write_text(keep_file, keep_list_text(*tuned)));
      req.prepare.precision.keep_fp32_file = keep_file;
      auto again = compile_model(req);
      if (again.ok()) cmp = run_cmp(ferry_file);
      if (again.ok() && cmp.ok()) {
        rep["compare"] = compare_json(*cmp);
        accurate = cmp->pass();
      }
      compile_cmd += " --keep-fp32 " + quote(keep_file);
      stage("tune-precision", tuned->pass && accurate ? "ok" : "warning",
            fmt::format("{} node(s) kept in fp32 after {} evaluation(s); {}", tuned->keep.size(), tuned->evaluations.size(),
                        accurate ? "the recompiled model meets " + goal.text() : "still below " + goal.text()),
            since(t), tune_cmd);
    }
  }

  // 6. bench (the compiled model, and the fp32 .onnx on the cpu backend as the baseline)
  t = Clock::now();
  BenchOptions bo;
  bo.model = ferry_file;
  bo.peer_model = o.model;
  bo.threads = o.threads;
  bo.backend = target.backend;
  bo.inputs = from_dir;
  bo.warmup = warmup_iterations_policy(2);
  bo.measure = measure_policy(10, std::nullopt);
  std::string bench_cmd = "ferry bench " + quote(ferry_file) + " --inputs " + quote(inputs_dir) + " --iterations 10";
  auto bench = run_bench(bo);
  BenchOptions base = bo;
  base.model = o.model;
  base.backend = "cpu";
  base.opt_level = 2;
  if (bench.ok() && !bench->results.empty()) base.batches = {bench->results.front().batch};
  auto baseline = run_bench(base);
  if (!bench.ok() || bench->results.empty()) {
    failed("bench", bench.ok() ? Status::internal("the benchmark returned no result") : bench.status(), since(t), bench_cmd);
  } else {
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
                          target.emulated ? " (emulated: CPU timings, not the device's)" : "");
    }
    const bool unstable = b.stats.cv > kUnstableCv;
    bj["unstable"] = unstable;
    if (unstable)  // the figures are not worth reading as they are: say so where the reader looks
      speed += fmt::format("; UNSTABLE (CV {:.0f}%: other load on this machine; rerun `ferry bench --duration 10`)",
                           100 * b.stats.cv);
    rep["bench"] = bj;
    stage("bench", "ok", fmt::format("median {:.3f} ms at batch {}{}", b.stats.median_ms, b.batch, speed), since(t), bench_cmd);
  }

  // 7. profile
  t = Clock::now();
  runtime::SessionOptions po = cand;
  ProfileOptions pf;
  pf.model = ferry_file;
  pf.session = po;
  pf.session.input_shapes = shapes;
  pf.inputs = from_dir;
  pf.runs = 3;
  pf.warmup = 1;
  auto profiled = run_profile(pf);
  Result<json> prof = profiled.ok() ? Result<json>(profile_to_json(*profiled)) : Result<json>(profiled.status());
  const std::string prof_cmd = "ferry profile " + quote(ferry_file) + " --inputs " + quote(inputs_dir) + " --trace " +
                               quote((fs::path(out) / "trace.json").string());
  if (profiled.ok()) FERRY_RETURN_IF_ERROR(write_text((fs::path(out) / "trace.json").string(), profile_to_trace(*profiled).dump()));
  if (!prof.ok()) {
    failed("profile", prof.status(), since(t), prof_cmd);
  } else {
    rep["profile"] = *prof;
    std::string top;
    const json& types = (*prof)["by_type"];
    for (size_t i = 0; i < types.size() && i < 3; ++i)
      top += fmt::format("{}{} {:.0f}%", i ? ", " : "", types[i]["op"].get<std::string>(),
                         100 * types[i]["share"].get<double>());
    stage("profile", "ok", "time by op type: " + top, since(t), prof_cmd);
  }

  res.verdict = blocked ? "blocked" : (!accurate ? "accuracy below threshold" : (fallbacks ? "ready with fallbacks" : "ready"));
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
