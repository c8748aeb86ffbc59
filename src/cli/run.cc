// `ferry run MODEL [--input NAME=FILE.npy ...] [--inputs DIR|FILE.npz] [--shape NAME=DIMS ...] [--seed N]
// [--normal] [--output-dir DIR] [--backend cpu|reference] [--opt-level 0..3] [--threads N] [--no-arena]`: runs the
// model (by default optimized at level 2 on the cpu backend) with the given or random inputs, prints a
// summary of every output and optionally writes them as DIR/<name>.npy.
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/session_flags.h"
#include "core/shape.h"
#include "runtime/session.h"
#include "tools/model_loader.h"
#include "tools/run_inputs.h"

namespace ferry::cli {

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string inputs_path;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
  bool normal = false;
  std::string output_dir;
  bool no_arena = false;
  SessionFlags session;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_run(const RunArgs& a) {
  tools::InputOptions opts;
  opts.seed = a.seed;
  opts.dist = a.normal ? tools::RandomDist::kNormal : tools::RandomDist::kUniform;
  opts.inputs_path = a.inputs_path;
  for (const std::string& s : a.inputs) {
    auto parsed = tools::parse_input_arg(s);
    if (!parsed.ok()) return report_error(parsed.status());
    if (!opts.files.emplace(parsed->first, parsed->second).second)
      return report_error(Status::invalid("--input " + parsed->first + " is given twice"));
  }
  for (const std::string& s : a.shapes) {
    auto parsed = tools::parse_shape_arg(s);
    if (!parsed.ok()) return report_error(parsed.status());
    if (!opts.shapes.emplace(parsed->first, parsed->second).second)
      return report_error(Status::invalid("--shape " + parsed->first + " is given twice"));
  }

  auto t0 = std::chrono::steady_clock::now();
  progress("loading " + a.model + " ...");
  runtime::SessionOptions so = session_options(a.session);
  so.input_shapes = opts.shapes;
  so.memory_arena = !a.no_arena;
  auto session = tools::open_session(a.model, so);
  if (!session.ok()) return report_error(session.status());
  progress(fmt::format("loaded in {:.2f} s", seconds_since(t0)));

  auto prepared = tools::prepare_inputs((*session)->graph(), opts);
  if (!prepared.ok()) return report_error(prepared.status());
  std::map<std::string, RtValue> feeds;
  std::printf("inputs:\n");
  for (const auto& in : *prepared) {
    std::printf("  %s: %s (%s)\n", in.name.c_str(), in.tensor.describe().c_str(), in.source.c_str());
    feeds.emplace(in.name, RtValue(in.tensor));
  }

  auto t1 = std::chrono::steady_clock::now();
  progress("running ...");
  auto outputs = (*session)->run(feeds);
  if (!outputs.ok()) return report_error(outputs.status().with_context(a.model));
  double run_s = seconds_since(t1);

  std::printf("outputs:\n");
  for (const auto& [name, v] : *outputs) {
    if (v.is_tensor()) {
      std::printf("  %s: %s\n", name.c_str(), tools::summarize_tensor(v.tensor).c_str());
    } else if (v.is_sequence()) {
      std::printf("  %s: sequence of %zu tensor(s)\n", name.c_str(), v.sequence.size());
      for (size_t i = 0; i < v.sequence.size() && i < 4; ++i)
        std::printf("    [%zu] %s\n", i, tools::summarize_tensor(v.sequence[i]).c_str());
    } else {
      std::printf("  %s: empty optional\n", name.c_str());
    }
  }
  // A .ferry file was optimized when it was compiled; --opt-level does not apply to it.
  const format::CompileOptions* compiled = (*session)->compile_options();
  std::printf("ran in %.3f s (%s backend, opt level %d%s)\n", run_s, a.session.backend.c_str(),
              compiled ? compiled->opt_level : a.session.opt_level, compiled ? ", compiled" : "");

  if (!a.output_dir.empty()) {
    std::vector<std::string> notes;
    auto written = tools::write_outputs(a.output_dir, *outputs, &notes);
    if (!written.ok()) return report_error(written.status());
    for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
    for (const std::string& p : *written) std::printf("wrote %s\n", p.c_str());
  }
  return 0;
}

}  // namespace

CommandFn add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on given or random inputs and summarise its outputs");
  cmd->add_option("MODEL", args->model, "the model (.onnx, or .ferry from `ferry compile`)")->required();
  cmd->add_option("--input", args->inputs, "feed input NAME from a .npy file (repeatable)")->type_name("NAME=FILE.npy");
  cmd->add_option("--inputs", args->inputs_path,
                  "feed every input from DIR/<name>.npy (names sanitized as for outputs) or from an .npz archive")
      ->type_name("DIR|FILE.npz");
  cmd->add_option("--shape", args->shapes, "concrete shape for an input with dynamic dims, e.g. x=1,3,224,224")
      ->type_name("NAME=DIMS");
  cmd->add_option("--seed", args->seed, "seed for random inputs (default 0)");
  cmd->add_flag("--normal", args->normal, "random floats from N(0,1) instead of uniform [-1,1)");
  cmd->add_option("--output-dir", args->output_dir,
                  "write each output as DIR/<name>.npy (characters outside A-Za-z0-9_.- become '_')")
      ->type_name("DIR");
  add_session_flags(cmd, args->session);
  cmd->add_flag("--no-arena", args->no_arena,
                "allocate every intermediate tensor separately instead of in the planned memory arena (to debug "
                "memory issues or measure what the arena saves)");
  return [args] { return run_run(*args); };
}

}  // namespace ferry::cli
