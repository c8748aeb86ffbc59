// `ferry run MODEL [--input NAME=FILE.npy ...] [--inputs DIR|FILE.npz] [--shape NAME=DIMS ...] [--seed N]
// [--normal] [--output-dir DIR] [--dump DIR [--dump-tensors A,B]] [--backend cpu|reference] [--opt-level 0..3]
// [--threads N] [--no-arena]`: runs the model (by default optimized at level 2 on the cpu backend) with the
// given or random inputs, prints a summary of every output and optionally writes them as DIR/<name>.npy;
// --dump writes every intermediate tensor the same way (for `ferry compare --golden/--candidate DIR`).
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "cli/session_flags.h"
#include "core/shape.h"
#include "runtime/session.h"
#include "tools/compare/dump.h"
#include "runtime/model_session.h"
#include "tools/run_inputs.h"

namespace ferry::cli {

namespace {

struct RunArgs {
  std::string model;
  InputFlags input;
  std::string output_dir;
  std::string dump_dir;
  std::vector<std::string> dump_tensors;
  bool no_arena = false;
  SessionFlags session;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_run(const RunArgs& a) {
  auto parsed_inputs = input_options(a.input);
  if (!parsed_inputs.ok()) return report_error(parsed_inputs.status());
  const tools::InputOptions& opts = *parsed_inputs;
  if (!a.dump_tensors.empty() && a.dump_dir.empty())
    return report_error(Status::invalid("--dump-tensors needs --dump DIR"));

  auto t0 = std::chrono::steady_clock::now();
  progress("loading " + a.model + " ...");
  runtime::SessionOptions so = session_options(a.session);
  so.input_shapes = opts.shapes;
  so.memory_arena = !a.no_arena;
  auto session = runtime::ModelSession::open(a.model, so);
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
  std::vector<std::string> dumped, dump_notes;
  Result<std::vector<std::pair<std::string, RtValue>>> outputs = Status::internal("not run");
  if (a.dump_dir.empty()) {
    outputs = (*session)->run(feeds);
  } else {
    auto d = tools::compare::run_and_dump(**session, feeds, a.dump_dir, tools::compare::split_names(a.dump_tensors));
    if (!d.ok()) return report_error(d.status().with_context(a.model));
    dumped = std::move(d->written);
    dump_notes = std::move(d->notes);
    outputs = std::move(d->outputs);
  }
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
  const runtime::Session& ran = (*session)->session(0);
  const std::string precision =
      ran.precision_report().mode == passes::PrecisionMode::kFp32 ? "fp32" : ran.precision_description();
  if (const std::string t = ran.target_label(); !t.empty()) std::printf("target %s\n", t.c_str());
  std::printf("ran in %.3f s (%s backend, opt level %d%s%s)\n", run_s, a.session.backend.c_str(),
              compiled ? compiled->opt_level : a.session.opt_level, compiled ? ", compiled" : "",
              precision == "fp32" ? "" : (", precision " + precision).c_str());
  // Kernel choices asked for (flags, or the .ferry file's): said when any is not `auto`.
  if (const backends::CpuOptions& cpu = ran.options().backend_options.cpu; a.session.backend == "cpu" && !(cpu == backends::CpuOptions{}))
    std::printf("cpu kernels: %s\n", backends::to_string(cpu).c_str());

  if (!a.dump_dir.empty()) {
    for (const std::string& n : dump_notes) std::printf("note: %s\n", n.c_str());
    std::printf("dumped %zu tensor(s) to %s\n", dumped.size(), a.dump_dir.c_str());
  }
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
  add_input_flags(cmd, args->input);
  cmd->add_option("--output-dir", args->output_dir,
                  "write each output as DIR/<name>.npy (characters outside A-Za-z0-9_.- become '_')")
      ->type_name("DIR");
  cmd->add_option("--dump", args->dump_dir,
                  "also write every intermediate tensor (and the inputs) as DIR/<ONNX tensor name>.npy, the layout "
                  "`ferry compare --golden DIR` / `--candidate DIR` reads (turns the memory arena off for the run)")
      ->type_name("DIR");
  cmd->add_option("--dump-tensors", args->dump_tensors,
                  "with --dump: only these ONNX tensors (comma-separated or repeated)")
      ->type_name("A,B,...");
  add_session_flags(cmd, args->session);
  cmd->add_flag("--no-arena", args->no_arena,
                "allocate every intermediate tensor separately instead of in the planned memory arena (to debug "
                "memory issues or measure what the arena saves)");
  return [args] { return run_run(*args); };
}

}  // namespace ferry::cli
