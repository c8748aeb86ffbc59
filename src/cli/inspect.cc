// `ferry inspect MODEL [--json FILE] [--shape NAME=DIMS ...]`: prints the model summary; --json also
// writes it as JSON ("-" for stdout instead of the text).
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "tools/inspect.h"
#include "tools/run_inputs.h"

namespace ferry::cli {

namespace {

struct InspectArgs {
  std::string model;
  std::string json;
  std::vector<std::string> shapes;
};

int run_inspect(const InspectArgs& a) {
  tools::InspectOptions opts;
  for (const std::string& s : a.shapes) {
    auto parsed = tools::parse_shape_arg(s);
    if (!parsed.ok()) return report_error(parsed.status());
    opts.shapes[parsed->first] = parsed->second;
  }
  progress("loading " + a.model + " ...");
  auto summary = tools::inspect_model(a.model, opts);
  if (!summary.ok()) return report_error(summary.status());
  if (a.json == "-") {
    std::printf("%s\n", tools::summary_to_json(*summary).dump(2).c_str());
    return 0;
  }
  std::fputs(tools::format_summary(*summary).c_str(), stdout);
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << tools::summary_to_json(*summary).dump(2) << "\n";
    f.close();
    if (!f) return report_error(Status::io("cannot write '" + a.json + "'"));
  }
  return 0;
}

}  // namespace

CommandFn add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Summarise a model: inputs, outputs, opsets, op histogram, "
                                                "parameters, estimated FLOPs");
  cmd->add_option("MODEL", args->model, "the model (.onnx, or .ferry from `ferry compile`)")->required();
  cmd->add_option("--json", args->json, "also write the summary as JSON to FILE ('-': JSON on stdout only)")
      ->type_name("FILE");
  cmd->add_option("--shape", args->shapes, "concrete shape for a dynamic input, to count its FLOPs")
      ->type_name("NAME=DIMS");
  return [args] { return run_inspect(*args); };
}

}  // namespace ferry::cli
