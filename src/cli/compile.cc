// `ferry compile MODEL.onnx -o OUT.ferry [--input-shape NAME:DIMS ...] [--dynamic-batch 1,2,4,8]
// [--opt-level 0..3] [--precision MODE --keep-fp32 FILE --keep-io-types --mixlist FILE]`: optimizes the model and writes the offline .ferry file; prints a summary.
// Malformed flag values are usage errors (exit 2); a model that cannot be compiled exits 1.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/session_flags.h"
#include "tools/compile.h"

namespace ferry::cli {

namespace {

// CLI11 already prefixes validator messages with the flag; drop ours ("--dynamic-batch: ...").
std::string without_flag(const Status& s) {
  std::string m = s.to_string();
  if (m.rfind("--", 0) == 0) {
    size_t colon = m.find(": ");
    if (colon != std::string::npos) return m.substr(colon + 2);
  }
  return m;
}

struct CompileArgs {
  std::string model, output, gears;
  std::vector<std::string> shapes;
  int opt_level = 2;
  SessionFlags precision;  // only the precision flags are registered
};

int run_compile(const CompileArgs& a) {
  tools::CompileRequest req;
  req.model_path = a.model;
  req.output_path = a.output;
  req.opt_level = a.opt_level;
  req.precision = session_options(a.precision).precision;
  for (const std::string& s : a.shapes) {
    auto parsed = tools::parse_input_shape(s);
    if (!parsed.ok()) return report_error(parsed.status());  // checked by the parser already
    if (!req.input_shapes.emplace(parsed->first, parsed->second).second) {
      std::fprintf(stderr, "error: --input-shape %s is given twice\n", parsed->first.c_str());
      return 2;
    }
  }
  if (!a.gears.empty()) {
    auto g = tools::parse_gears(a.gears);
    if (!g.ok()) return report_error(g.status());
    req.dynamic_batch = *g;
  }
  progress("compiling " + a.model + " ...");
  auto r = tools::compile_model(req);
  if (!r.ok()) return report_error(r.status());
  std::fputs(tools::format_compile_report(*r).c_str(), stdout);
  return 0;
}

}  // namespace

CommandFn add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand("compile", "Optimize an ONNX model and write it as an offline .ferry file");
  cmd->add_option("MODEL", args->model, "the .onnx model")->required();
  cmd->add_option("-o,--output", args->output, "the .ferry file to write")->required()->type_name("OUT.ferry");
  cmd->add_option("--input-shape", args->shapes, "fix an input's shape before optimizing (repeatable)")
      ->type_name("NAME:DIMS")
      ->check(CLI::Validator(
          [](std::string& s) {
            auto r = tools::parse_input_shape(s);
            return r.ok() ? std::string() : without_flag(r.status());
          },
          "NAME:DIMS", "input shape"));
  cmd->add_option("--dynamic-batch", args->gears,
                  "batch sizes to prepare (dim 0 of every input stays dynamic; the gear is picked at run time)")
      ->type_name("1,2,4,8")
      ->check(CLI::Validator(
          [](std::string& s) {
            auto r = tools::parse_gears(s);
            return r.ok() ? std::string() : without_flag(r.status());
          },
          "LIST", "gears"));
  cmd->add_option("--opt-level", args->opt_level, "0: none, 1: cleanup and folding, 2: + fusions (default), 3: + layout")
      ->check(CLI::Range(0, 3));
  add_precision_flags(cmd, args->precision);
  return [args] { return run_compile(*args); };
}

}  // namespace ferry::cli
