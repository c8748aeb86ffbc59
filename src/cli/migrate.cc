// `ferry migrate MODEL --target T [--precision MODE] [input flags] [-o OUTDIR] [--auto-precision]
// [--metric GOAL] [--threads N] [--batch N]`: doctor -> check -> compile -> compare -> tune-precision ->
// bench -> profile in one run, a progress line per stage, a one-screen summary, and OUTDIR/model.ferry,
// report.json, report.html. Exit 0 when the verdict is "ready" (or "ready with fallbacks"), 3 when the
// accuracy is below the threshold or nodes are unsupported, 1 on errors (a stage that could not run: the
// report files are still written and say which and why), 2 on usage errors.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "tools/migrate.h"

namespace ferry::cli {

namespace {

struct MigrateArgs {
  tools::MigrateOptions o;
  InputFlags input;
};

int run_migrate_cmd(MigrateArgs& a) {
  auto inputs = input_options(a.input);
  if (!inputs.ok()) return report_error(inputs.status());
  a.o.inputs = *inputs;
  // Stage lines go to stderr always: a migration takes a while and the lines are the log of it.
  a.o.progress = [](const std::string& s) { std::fprintf(stderr, "migrate: %s\n", s.c_str()); };
  auto r = tools::run_migrate(a.o);
  if (!r.ok()) return report_error(r.status());
  std::fputs(tools::format_migrate_summary(*r).c_str(), stdout);
  if (!r->failure.ok()) return report_error(r->failure);  // after the summary: the error is the last word
  return r->verdict.rfind("ready", 0) == 0 ? 0 : 3;
}

}  // namespace

CommandFn add_migrate_command(CLI::App& app) {
  auto a = std::make_shared<MigrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "migrate",
      "The whole migration in one run: doctor, check, compile, compare (layerwise, fp32 golden vs the target's "
      "numerics), tune-precision (--auto-precision), bench, profile; writes model.ferry, report.json, report.html");
  cmd->add_option("MODEL", a->o.model, "the .onnx model")->required();
  cmd->add_option("--target", a->o.target,
                  "built-in target (cpu, reference, ascend310p, ascend910b) or a profile file; targets without a local "
                  "device (ascend*) are EMULATED on this CPU: their numerics, CPU timings (default cpu)")
      ->type_name("NAME|FILE");
  cmd->add_option("--precision", a->o.precision, "precision mode (default: the target's, fp16 for Ascend as ATC)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16"}))
      ->type_name("MODE");
  cmd->add_option("-o,--output", a->o.outdir, "folder for model.ferry, report.json, report.html (default ferry-migrate)")
      ->type_name("OUTDIR");
  cmd->add_flag("--auto-precision", a->o.auto_precision,
                "when the metrics miss, run tune-precision and recompile with the keep-fp32 list it finds");
  cmd->add_option("--metric", a->o.metric, "the accuracy goal for every output (default cosine>=0.99, msit's)")
      ->type_name("GOAL");
  cmd->add_option("--threads", a->o.threads, "threads (default: all cores)")->check(at_least_one());
  cmd->add_option("--batch", a->o.batch, "batch size for inputs with a dynamic dim 0 (default: 1)")->check(at_least_one());
  add_input_flags(cmd, a->input);
  return [a] { return run_migrate_cmd(*a); };
}

}  // namespace ferry::cli
