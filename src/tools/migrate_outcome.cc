// What `ferry migrate` says about a run: the compare stage's output line, a stage that could not run, and the
// report files (written also when a stage failed, so the page says which one and why).
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/text_file.h"
#include "tools/migrate_internal.h"

namespace ferry::tools {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& migrate_stage_names() {
  static const std::vector<std::string> kNames = {"doctor", "check", "compile", "compare", "tune-precision", "bench",
                                                  "profile"};
  return kNames;
}

std::string outputs_summary(const std::vector<compare::Row>& outputs, bool meet, const MetricGoal& goal) {
  std::string figures;
  for (const compare::Row& row : outputs) {
    if (!meet && row.pass()) continue;  // the reader wants the outputs that failed, not the ones that passed
    std::string what;
    if (!row.metrics) what = row.note.empty() ? "not compared" : row.note;
    else if (meet) what = fmt::format("cos {:.6f}", row.metrics->cosine);
    else what = compare::metrics_summary(*row.metrics);
    figures += (figures.empty() ? "" : ", ") + row.tensor + " " + what;
  }
  return (meet ? "outputs meet " : "outputs MISS ") + goal.text() + ": " + figures;
}

void record_failure(MigrateResult& res, const std::string& stage, const Status& why) {
  if (!res.failure.ok()) return;  // the first failure is the run's; the stage table has the others
  Status s = why;
  res.failure = std::move(s).with_context("ferry migrate: the " + stage + " stage failed");
  res.report["failure"] = {{"stage", stage}, {"error", why.to_string()}};
}

namespace {
bool has_line(const MigrateResult& res, const std::string& name) {
  for (const MigrateStage& s : res.stages)
    if (s.name == name) return true;
  return false;
}
}  // namespace

std::string next_stage(const MigrateResult& res) {
  for (const std::string& name : migrate_stage_names())
    if (!has_line(res, name)) return name;
  return migrate_stage_names().back();
}

void skip_remaining(MigrateResult& res, const std::string& failed) {
  for (const std::string& name : migrate_stage_names())
    if (!has_line(res, name)) res.stages.push_back({name, "skipped", "not run: the " + failed + " stage failed", 0, ""});
}

Status write_migrate_report(MigrateResult& res, const std::string& outdir) {
  json& rep = res.report;
  rep["verdict"] = res.verdict;
  json stages = json::array(), commands = json::array();
  for (const MigrateStage& s : res.stages) {
    stages.push_back({{"name", s.name}, {"status", s.status}, {"summary", s.summary},
                      {"seconds", std::isfinite(s.seconds) ? json(s.seconds) : json(nullptr)}, {"command", s.command}});
    if (!s.command.empty()) commands.push_back(s.command);
  }
  rep["stages"] = stages;
  rep["commands"] = commands;
  res.report_json = (fs::path(outdir) / "report.json").string();
  res.report_html = (fs::path(outdir) / "report.html").string();
  for (const auto& [path, text] : {std::pair{res.report_json, rep.dump(2) + "\n"},
                                   std::pair{res.report_html, render_migrate_html(rep)}})
    FERRY_RETURN_IF_ERROR(write_text_file(path, text));
  return Status();
}

}  // namespace ferry::tools
