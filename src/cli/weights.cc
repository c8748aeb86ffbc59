// `ferry weights audit MODEL CHECKPOINT [--json FILE]` and
// `ferry weights convert CHECKPOINT --to mindspore --names PARAMS.txt -o OUT.ckpt [--json FILE]`.
// Exit codes: 0 (no findings), 3 (the audit found something: the report says what), 1 (error), 2 (usage).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "tools/weights.h"

namespace ferry::cli {

namespace {

constexpr int kFindingsExit = 3;

struct WeightsArgs {
  std::string model, checkpoint, names, output, to = "mindspore", json;
  CLI::App* audit = nullptr;
  CLI::App* convert = nullptr;
};

int run_audit(const WeightsArgs& a) {
  progress("reading " + a.checkpoint + " ...");
  auto r = tools::audit_weights(a.model, a.checkpoint);
  if (!r.ok()) return report_error(r.status());
  if (a.json != "-") std::fputs(weights::audit_to_text(*r).c_str(), stdout);
  if (int rc = write_json_report(weights::audit_to_json(*r), a.json)) return rc;
  return r->clean() ? 0 : kFindingsExit;
}

int run_convert(const WeightsArgs& a) {
  progress("converting " + a.checkpoint + " ...");
  auto r = tools::convert_weights_to_mindspore(a.checkpoint, a.names, a.output);
  if (!r.ok()) return report_error(r.status());
  if (a.json != "-") std::fputs(tools::conversion_to_text(r->conversion, r->output).c_str(), stdout);
  if (int rc = write_json_report(tools::conversion_to_json(r->conversion, r->output), a.json)) return rc;
  return r->conversion.audit.clean() ? 0 : kFindingsExit;
}

}  // namespace

CommandFn add_weights_command(CLI::App& app) {
  auto args = std::make_shared<WeightsArgs>();
  CLI::App* cmd = app.add_subcommand("weights", "Check a checkpoint against a model, or convert it for MindSpore "
                                                "(torch .pth/.pt, .safetensors, .npz, MindSpore .ckpt; no pickled "
                                                "code is ever run)");
  cmd->require_subcommand(1);
  args->audit = cmd->add_subcommand(
      "audit", "Compare CHECKPOINT with the parameters MODEL expects: missing, unexpected and renamed keys, shape, "
               "transposed and dtype mismatches, BatchNorm statistics absent or at their defaults. Exit 3 when "
               "there are findings");
  args->audit->add_option("MODEL", args->model, "the model (.onnx from ferry.torch.export, or its .ferry)")->required();
  args->audit->add_option("CHECKPOINT", args->checkpoint, "the checkpoint")->required();
  args->audit->add_option("--json", args->json, "also write the report as JSON to FILE ('-': JSON on stdout only)")
      ->type_name("FILE");
  args->convert = cmd->add_subcommand(
      "convert", "Rename a checkpoint's tensors onto a MindSpore network's parameters and write a MindSpore .ckpt; "
                 "the name map is derived (same names, MindSpore's BatchNorm/Embedding renames, then order and "
                 "shape) and reported key by key, and the result is audited. Exit 3 when the audit finds something");
  args->convert->add_option("CHECKPOINT", args->checkpoint, "the checkpoint to convert")->required();
  args->convert->add_option("--to", args->to, "the framework to convert for")
      ->check(CLI::IsMember({"mindspore"}))->default_str("mindspore");
  args->convert->add_option("--names", args->names,
                            "the MindSpore network's parameters, one per line: NAME [DIMS] [DTYPE], e.g. "
                            "'bn1.gamma 64 float32' (print them with [(p.name, p.shape) for p in net.get_parameters()])")
      ->required()->type_name("PARAMS.txt");
  args->convert->add_option("-o,--output", args->output, "the MindSpore checkpoint to write")
      ->required()->type_name("OUT.ckpt");
  args->convert->add_option("--json", args->json, "also write the mapping and audit as JSON ('-': JSON only)")
      ->type_name("FILE");
  return [args] { return args->audit->parsed() ? run_audit(*args) : run_convert(*args); };
}

}  // namespace ferry::cli
