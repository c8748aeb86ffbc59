// `ferry tune-precision MODEL --precision fp16|bf16 [--metric cosine>=0.999] [input flags] [session flags]
// [-o keep.txt] [--json FILE]`: finds nodes to keep in fp32 so every output meets the metric, and writes a
// keep list `ferry compile --keep-fp32` reads. Exit 0 when the goal is met, 3 when not even all-fp32
// meets it (1: error, 2: usage).
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "core/text_file.h"
#include "frontend/onnx/import.h"
#include "cli/input_flags.h"
#include "cli/session_flags.h"
#include "tools/tune_precision.h"

namespace ferry::cli {

namespace {

struct TuneArgs {
  std::string model, metric = "cosine>=0.999", output, json;
  InputFlags input;
  SessionFlags session;
  int max_evaluations = 64;
};

int run_tune(const TuneArgs& a) {
  auto inputs = input_options(a.input);
  if (!inputs.ok()) return report_error(inputs.status());
  auto goal = tools::parse_metric_goal(a.metric);
  if (!goal.ok()) return report_error(goal.status());
  tools::TuneOptions o;
  o.model = a.model;
  o.session = session_options(a.session);
  if (!a.session.keep_fp32_file.empty() || !a.session.mixlist.empty())
    return report_error(Status::invalid("tune-precision finds the keep list itself: drop --keep-fp32 / --mixlist"));
  o.inputs = *inputs;
  o.goal = *goal;
  o.max_evaluations = a.max_evaluations;
  o.progress = progress;
  for (const std::string& path : {a.output, a.json}) {
    if (path.empty()) continue;
    std::ofstream probe(path, std::ios::app);  // find out now, not after the search, that it cannot be written
    if (!probe) return report_error(Status::io("cannot write '" + path + "'"));
  }
  // The golden and every trial open the model: it is read and imported once.
  frontend::ImportCache import_cache;
  auto r = tools::tune_precision(o);
  if (!r.ok()) return report_error(r.status());
  std::fputs(tools::format_tune_report(*r).c_str(), stdout);
  if (!a.output.empty()) {
    Status st = write_text_file(a.output, tools::keep_list_text(*r));
    if (!st.ok()) return report_error(st);
    std::printf("wrote %s (ferry compile %s --precision %s --keep-fp32 %s)\n", a.output.c_str(), a.model.c_str(),
                a.session.precision.c_str(), a.output.c_str());
  }
  if (!a.json.empty()) {
    Status st = write_text_file(a.json, tools::tune_report_to_json(*r).dump(2) + "\n");
    if (!st.ok()) return report_error(st);
  }
  return r->pass ? 0 : 3;
}

}  // namespace

CommandFn add_tune_precision_command(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune-precision",
      "Find a small set of nodes to keep in fp32 so the model in fp16/bf16 meets a metric on every output; "
      "writes a keep list for `ferry compile --keep-fp32`");
  cmd->add_option("MODEL", a->model, "the .onnx model")->required();
  cmd->add_option("--metric", a->metric,
                  "the goal every output must meet against the fp32 reference: cosine>=C, rel_euclid<=E, "
                  "max_abs<=A, max_rel<=R, rmse<=R, snr_db>=S or top1>=T (default cosine>=0.999)")
      ->type_name("GOAL");
  cmd->add_option("-o,--output", a->output, "write the keep list here (one node per line, '#' comments)")
      ->type_name("keep.txt");
  cmd->add_option("--json", a->json, "also write the search as JSON (schema ferry.tune-precision/1)")->type_name("FILE");
  cmd->add_option("--max-evaluations", a->max_evaluations, "stop after this many model runs (default 64)")
      ->check(at_least_one());
  add_input_flags(cmd, a->input);
  add_session_flags(cmd, a->session);
  cmd->callback([a, cmd] {
    if (a->session.precision != "fp16" && a->session.precision != "bf16")
      throw CLI::ValidationError("--precision", "tune-precision needs --precision fp16 or bf16");
    (void)cmd;
  });
  return [a] { return run_tune(*a); };
}

}  // namespace ferry::cli
