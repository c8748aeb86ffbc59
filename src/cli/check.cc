// `ferry check MODEL --target T [--json FILE] [--csv FILE] [--fail-on unsupported|fallback]
// [--shape NAME=DIMS ...]`: per node, where it would run on the target and why not the device; exit
// 3 when --fail-on is met, so CI can gate a model on a target.
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "core/text_file.h"
#include "targets/target.h"
#include "tools/check.h"
#include "tools/run_inputs.h"

namespace ferry::cli {

namespace {

struct CheckArgs {
  std::string model;
  std::string target = "cpu";
  std::string json, csv, fail_on;
  std::vector<std::string> shapes;
};

int run_check(const CheckArgs& a) {
  tools::CheckOptions opts;
  opts.target = a.target;
  for (const std::string& s : a.shapes) {
    auto parsed = tools::parse_shape_arg(s);
    if (!parsed.ok()) return report_error(parsed.status());
    opts.input_shapes[parsed->first] = parsed->second;
  }
  progress("checking " + a.model + " against " + a.target + " ...");
  auto rep = tools::check_model(a.model, opts);
  if (!rep.ok()) return report_error(rep.status());
  if (a.json == "-") {
    std::printf("%s\n", tools::check_to_json(*rep).dump(2).c_str());
  } else {
    std::fputs(tools::format_check(*rep).c_str(), stdout);
    if (!a.json.empty())
      if (Status st = write_text_file(a.json, tools::check_to_json(*rep).dump(2) + "\n"); !st.ok()) return report_error(st);
  }
  if (!a.csv.empty())
    if (Status st = write_text_file(a.csv, tools::check_to_csv(*rep)); !st.ok()) return report_error(st);
  if (!a.fail_on.empty() && tools::check_fails(*rep, a.fail_on)) {
    std::fprintf(stderr, "check: --fail-on %s is met (%lld host fallback, %lld unsupported)\n", a.fail_on.c_str(),
                 static_cast<long long>(rep->host), static_cast<long long>(rep->unsupported));
    return 3;
  }
  return 0;
}

}  // namespace

CommandFn add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  std::string names;
  for (const auto& n : targets::builtin_target_names()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* cmd = app.add_subcommand(
      "check", "Check a model against a target before compiling: per node the placement (device, rewritten, host "
               "fallback, unsupported) and the reason, a summary by op type, dynamic-shape and folding findings, and "
               "the bytes crossing device<->host per inference. Targets without a local device (ascend*) are "
               "emulated when run; check itself only reads the profile");
  cmd->add_option("MODEL", args->model, "the model (.onnx, or .ferry from `ferry compile`)")->required();
  cmd->add_option("--target", args->target, "built-in target (" + names + ") or a profile file (docs/targets.md); default cpu")
      ->type_name("NAME|FILE");
  cmd->add_option("--json", args->json, "also write the report as JSON to FILE ('-': JSON on stdout only)")->type_name("FILE");
  cmd->add_option("--csv", args->csv, "also write the per-node rows as CSV to FILE")->type_name("FILE");
  cmd->add_option("--fail-on", args->fail_on,
                  "exit with code 3 when a node is 'unsupported', or with 'fallback' when one is unsupported or runs "
                  "on the host (for CI gates)")
      ->check(CLI::IsMember({"unsupported", "fallback"}))
      ->type_name("unsupported|fallback");
  cmd->add_option("--shape", args->shapes,
                  "concrete shape for an input (dynamic dims not given are analysed as 1), so shape subgraphs fold as "
                  "compile would fold them")
      ->type_name("NAME=DIMS");
  return [args] { return run_check(*args); };
}

}  // namespace ferry::cli
