// `ferry compile MODEL.onnx -o OUT.ferry [--input-shape NAME:DIMS ...] [--dynamic-batch 1,2,4,8]
// [--opt-level 0..3] [--precision MODE --keep-fp32 FILE --keep-io-types --mixlist FILE]`: optimizes the model and writes the offline .ferry file; prints a summary.
// Malformed flag values are usage errors (exit 2); a model that cannot be compiled exits 1.
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/session_flags.h"
#include "tools/compile.h"
#include "tools/run_inputs.h"
#include "runtime/dynamic_shapes.h"

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
  std::string model, output, gears, dynamic_dims, json, preprocess;
  std::vector<std::string> shapes;
  SessionFlags session;  // precision, target, opt level and cpu kernel flags (not --backend/--threads)
};

int run_compile(const CompileArgs& a) {
  tools::CompileRequest req;
  req.model_path = a.model;
  req.output_path = a.output;
  const runtime::SessionOptions so = session_options(a.session);
  req.prepare.opt_level = so.opt_level;
  req.prepare.precision = so.precision;
  req.prepare.precision_given = so.precision_given;
  req.prepare.target = so.target;
  req.cpu = so.backend_options.cpu;
  req.allow_newer_opset = a.session.allow_newer_opset;
  req.preprocess = a.preprocess;
  for (const std::string& s : a.shapes) {
    if (runtime::is_range_shape(s)) {
      auto ranged = runtime::parse_input_range(s);
      if (!ranged.ok()) return report_error(ranged.status());
      if (!req.input_ranges.emplace(ranged->first, ranged->second).second) {
        std::fprintf(stderr, "error: --input-shape %s is given twice\n", ranged->first.c_str());
        return 2;
      }
      continue;
    }
    auto parsed = tools::parse_shape_arg(s, "--input-shape");
    if (!parsed.ok()) return report_error(parsed.status());  // checked by the parser already
    if (!req.prepare.input_shapes.emplace(parsed->first, parsed->second).second) {
      std::fprintf(stderr, "error: --input-shape %s is given twice\n", parsed->first.c_str());
      return 2;
    }
  }
  if (!a.gears.empty()) {
    auto g = tools::parse_gears(a.gears);
    if (!g.ok()) return report_error(g.status());
    req.dynamic_batch = *g;
  }
  if (!a.dynamic_dims.empty()) {
    auto g = runtime::parse_dynamic_dims(a.dynamic_dims);
    if (!g.ok()) return report_error(g.status());
    req.dynamic_dims = *g;
  }
  progress("compiling " + a.model + " ...");
  auto r = tools::compile_model(req);
  if (!r.ok()) return report_error(r.status());
  if (a.json != "-") std::fputs(tools::format_compile_report(*r).c_str(), stdout);
  return write_json_report(tools::compile_report_to_json(*r), a.json);
}

}  // namespace

CommandFn add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand("compile", "Optimize an ONNX model and write it as an offline .ferry file");
  cmd->add_option("MODEL", args->model, "the .onnx model")->required();
  cmd->add_option("-o,--output", args->output, "the .ferry file to write")->required()->type_name("OUT.ferry");
  cmd->add_option("--input-shape,--shape", args->shapes,
                  "fix an input's shape before optimizing (repeatable); a dim may be a range 1~8 (checked at run time, "
                  "as ATC's --input_shape ranges) or -1 (any size, or the dims --dynamic-dims fills)")
      ->type_name("NAME=DIMS")
      ->check(CLI::Validator(
          [](std::string& s) {
            if (runtime::is_range_shape(s)) {
              auto r = runtime::parse_input_range(s);
              return r.ok() ? std::string() : without_flag(r.status());
            }
            auto r = tools::parse_shape_arg(s, "--input-shape");
            return r.ok() ? std::string() : without_flag(r.status());
          },
          "", "input shape"));
  cmd->add_option("--preprocess", args->preprocess,
                  "put the per-pixel part of a preprocessing spec (ferry evaluate's --preprocess: order, scale, mean, "
                  "std, layout, dtype) into the model as its first nodes, so it takes uint8 NHWC images (as ATC's AIPP); "
                  "resize and crop stay with the caller")
      ->type_name("SPEC");
  cmd->add_option("--dynamic-batch", args->gears,
                  "batch sizes to prepare (dim 0 of every input stays dynamic; the gear is picked at run time)")
      ->type_name("1,2,4,8")
      ->check(CLI::Validator(
          [](std::string& s) {
            auto r = tools::parse_gears(s);
            return r.ok() ? std::string() : without_flag(r.status());
          },
          "LIST", "gears"));
  cmd->add_option("--dynamic-dims", args->dynamic_dims,
                  "dims gears, as ATC's --dynamic_dims: each ';'-separated gear gives a value for every dynamic input "
                  "dim (symbolic in the model or -1 in --input-shape), in input order; one session is prepared per "
                  "gear and picked from the inputs' shapes at run time")
      ->type_name("\"1,224,224;1,320,320\"")
      ->check(CLI::Validator(
          [](std::string& s) {
            auto r = runtime::parse_dynamic_dims(s);
            return r.ok() ? std::string() : without_flag(r.status());
          },
          "GEARS", "dims gears"));
  cmd->add_option("--json", args->json, "also write the report as JSON to FILE ('-': JSON on stdout only)")
      ->type_name("FILE");
  add_prepare_flags(cmd, args->session);
  return [args] { return run_compile(*args); };
}

}  // namespace ferry::cli
