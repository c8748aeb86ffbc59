// `ferry migrate`: the whole migration in one run, as a migration engineer does it:
//   doctor -> check -> compile -> compare (fp32 golden vs the target's numerics, layerwise)
//   -> tune-precision (only with --auto-precision, when the metrics miss) -> bench -> profile
// Every stage is a call into the tool that owns it (doctor.h, check.h, compile.h, compare/, tune_precision.h,
// bench.h); a stage that cannot run is reported as skipped or failed with its reason, never faked.
// Writes OUTDIR/model.ferry, OUTDIR/report.json (schema ferry.migrate/1, docs/migration-guide.md) and
// OUTDIR/report.html (one self-contained page: inline SVG, no network).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tools/run_inputs.h"

namespace ferry::tools {

struct MigrateOptions {
  std::string model;
  std::string target = "cpu";
  std::string precision;  // "" : the target's default (ATC's default for Ascend is fp16)
  std::string outdir = "ferry-migrate";
  InputOptions inputs;
  bool auto_precision = false;
  std::string metric = "cosine>=0.99";  // the compare verdict and the tune-precision goal
  int threads = 0;
  int64_t batch = 0;                    // 0: the model's own batch
  std::function<void(const std::string&)> progress;
};

struct MigrateStage {
  std::string name;     // doctor, check, compile, compare, tune-precision, bench, profile
  std::string status;   // ok, warning, failed, skipped
  std::string summary;  // one line
  double seconds = 0;
  std::string command;  // the command that reproduces it
};

struct MigrateResult {
  nlohmann::json report;  // everything, schema ferry.migrate/1
  std::vector<MigrateStage> stages;
  // "ready", "ready with fallbacks", "accuracy below threshold", "blocked" (unsupported nodes), "failed" (a
  // stage could not run: `failure`)
  std::string verdict;
  Status failure;         // the first stage that could not run, named; ok when every stage ran
  std::string report_json, report_html, ferry_file;
};

// An error only when nothing could run (options, the model, its inputs); once the stages start, the report
// files are written whatever happens, and a stage that fails is in `failure` and the report.
Result<MigrateResult> run_migrate(const MigrateOptions& o);

// The one-screen summary printed at the end.
std::string format_migrate_summary(const MigrateResult& r);

// report.html from report.json (migrate_html.cc).
std::string render_migrate_html(const nlohmann::json& report);

}  // namespace ferry::tools
