// Pieces of `ferry migrate` shared by its files (not a public interface): the one-line output verdict of
// the compare stage, and the report files, which are written however far the stages got.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/compare/compare.h"
#include "tools/migrate.h"
#include "tools/tune_precision.h"

namespace ferry::tools {

// The stages in run order (MigrateStage::name).
const std::vector<std::string>& migrate_stage_names();
// The first stage in run order that has no line in res.stages yet: the one running (each stage's line is
// added when it ends); the last stage when all have one.
std::string next_stage(const MigrateResult& res);

// The compare stage's line about the outputs. When they miss: the outputs that fail, each with its figures
// or the reason it could not be measured ("u shape [5] vs [4] (golden vs candidate)"), never an output that
// passes. When they meet the goal: every output's cosine.
std::string outputs_summary(const std::vector<compare::Row>& outputs, bool meet, const MetricGoal& goal);

// Records that `stage` could not run: the first such failure is the run's (MigrateResult::failure, and
// report.json's "failure": {stage, error}); the stage table has the others.
void record_failure(MigrateResult& res, const std::string& stage, const Status& why);

// After a stage the rest cannot do without (compile) failed, or one stopped on an unexpected error: the
// stages that did not run are listed as skipped, with the reason.
void skip_remaining(MigrateResult& res, const std::string& failed);

// Writes report.json and report.html into `outdir` from res.report and res.stages (stages[] and commands[]
// are filled here) and sets res.report_json / res.report_html.
Status write_migrate_report(MigrateResult& res, const std::string& outdir);

}  // namespace ferry::tools
