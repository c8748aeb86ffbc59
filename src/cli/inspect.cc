// `ferry inspect MODEL [--json FILE] [--shape NAME=DIMS ...] [--plan [--backend B] [--opt-level N]]`:
// prints the model summary, or with --plan what a session runs (kernel per node, memory plan); --json
// also writes it as JSON ("-" for stdout instead of the text).
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/session_flags.h"
#include "tools/inspect.h"
#include "tools/inspect_plan.h"
#include "tools/run_inputs.h"

namespace ferry::cli {

namespace {

struct InspectArgs {
  std::string model;
  std::string json;
  std::vector<std::string> shapes;
  bool plan = false;
  SessionFlags session;
};

// Writes `text` to stdout, or `json` to stdout ("-") or to a file as well.
int emit(const std::string& text, const nlohmann::json& json, const std::string& json_path) {
  if (json_path != "-") std::fputs(text.c_str(), stdout);
  return write_json_report(json, json_path);
}

int run_inspect(const InspectArgs& a) {
  tools::InspectOptions opts;
  for (const std::string& s : a.shapes) {
    auto parsed = tools::parse_shape_arg(s);
    if (!parsed.ok()) return report_error(parsed.status());
    opts.shapes[parsed->first] = parsed->second;
  }
  progress("loading " + a.model + " ...");
  if (a.plan) {
    runtime::SessionOptions so = session_options(a.session);
    so.input_shapes = opts.shapes;
    auto plan = tools::plan_model(a.model, so);
    if (!plan.ok()) return report_error(plan.status());
    return emit(tools::format_model_plan(*plan), tools::model_plan_to_json(*plan), a.json);
  }
  auto summary = tools::inspect_model(a.model, opts);
  if (!summary.ok()) return report_error(summary.status());
  return emit(tools::format_summary(*summary), tools::summary_to_json(*summary), a.json);
}

}  // namespace

CommandFn add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Summarise a model: inputs, outputs, opsets, op histogram, "
                                                "parameters, estimated FLOPs; or (--plan) its kernels and memory plan");
  cmd->add_option("MODEL", args->model, "the model (.onnx, or .ferry from `ferry compile`)")->required();
  cmd->add_option("--json", args->json, "also write the summary as JSON to FILE ('-': JSON on stdout only)")
      ->type_name("FILE");
  cmd->add_option("--shape", args->shapes,
                  "concrete shape for a dynamic input, to count its FLOPs (with --plan: fixed at load, so its "
                  "intermediates can be planned)")
      ->type_name("NAME=DIMS");
  cmd->add_flag("--plan", args->plan,
                "show what a session runs instead of the summary: per node (after optimization) the kernel chosen, "
                "the ONNX nodes it covers and its outputs; the memory plan (arena offsets, lifetimes, arena vs "
                "naive sum, peak); weight bytes. --backend, --opt-level and --threads apply to it");
  add_session_flags(cmd, args->session);
  return [args] { return run_inspect(*args); };
}

}  // namespace ferry::cli
