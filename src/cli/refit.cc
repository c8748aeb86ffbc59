// `ferry refit MODEL --weights CHECKPOINT -o OUT [--json FILE]`: new weights into an exported model
// (tools/refit.h). OUT.onnx is the refitted model; OUT.ferry compiles it as `ferry compile` would.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "tools/refit.h"

namespace ferry::cli {

namespace {

struct RefitArgs {
  std::string model, weights, output, json;
};

int run_refit(const RefitArgs& a) {
  tools::RefitRequest req;
  req.model = a.model;
  req.checkpoint = a.weights;
  req.output = a.output;
  progress("refitting " + a.model + " with " + a.weights + " ...");
  auto r = tools::refit_model(req);
  if (!r.ok()) return report_error(r.status());
  if (a.json != "-") std::fputs(tools::refit_to_text(*r).c_str(), stdout);
  return write_json_report(tools::refit_to_json(*r), a.json);
}

}  // namespace

CommandFn add_refit_command(CLI::App& app) {
  auto args = std::make_shared<RefitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "refit", "Put a checkpoint's weights into an exported model (from ferry.torch.export) through its module map: "
               "weights replaced, transposed or refolded with their BatchNorm; OUT.ferry also compiles it");
  cmd->add_option("MODEL", args->model, "the exported .onnx (its module map says which state_dict key each weight is)")
      ->required();
  cmd->add_option("--weights", args->weights, "the checkpoint (.pth/.pt, .safetensors, .npz, MindSpore .ckpt)")
      ->required()->type_name("CHECKPOINT");
  cmd->add_option("-o,--output", args->output, "the refitted model: .onnx, or .ferry to compile it")
      ->required()->type_name("OUT");
  cmd->add_option("--json", args->json, "also write the report as JSON to FILE ('-': JSON on stdout only)")
      ->type_name("FILE");
  return [args] { return run_refit(*args); };
}

}  // namespace ferry::cli
