// `ferry bench MODEL [--batch 1,8] [--threads N] [--warmup N | --warmup-ms T] [--iterations N] [--duration S]
// [--json FILE] [--peer onnxruntime] [--peer-model FILE.onnx] [--backend cpu|reference] [--opt-level N]
// [--shape/--input/--inputs/--seed/--normal as ferry run]`: latency statistics, throughput, load time and
// peak memory per batch size, and ferry/peer ratios. The work is in tools/bench.h.
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "cli/session_flags.h"
#include "tools/bench.h"
#include "tools/run_inputs.h"

#ifndef FERRY_VERSION
#define FERRY_VERSION "unknown"
#endif

namespace ferry::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::vector<int64_t> batches;
  SessionFlags session;
  int64_t warmup = -1;
  double warmup_ms = -1;
  int64_t iterations = -1;
  double duration = -1;
  std::string json;
  std::vector<std::string> peers;
  std::string peer_model;
  int rounds = tools::BenchOptions::kDefaultRounds;
  InputFlags input;
};

int run_bench_command(const BenchArgs& a) {
  tools::BenchOptions o;
  o.model = a.model;
  o.batches = a.batches;
  o.threads = a.session.threads;
  o.backend = a.session.backend;
  o.opt_level = a.session.opt_level;
  o.precision = session_options(a.session).precision;
  o.target = a.session.target;
  o.precision_given = !a.session.precision.empty();
  o.cpu = cpu_options(a.session);
  o.allow_newer_opset = a.session.allow_newer_opset;
  o.max_memory = session_options(a.session).max_memory;
  o.peers = a.peers;
  o.peer_model = a.peer_model;
  o.rounds = a.rounds;
  auto inputs = input_options(a.input);
  if (!inputs.ok()) return report_error(inputs.status());
  o.inputs = *inputs;
  if (a.warmup >= 0) o.warmup = tools::warmup_iterations_policy(a.warmup);
  if (a.warmup_ms >= 0) o.warmup = tools::warmup_ms_policy(a.warmup_ms);
  o.measure = tools::measure_policy(a.iterations > 0 ? std::optional<int64_t>(a.iterations) : std::nullopt,
                                    a.duration > 0 ? std::optional<double>(a.duration) : std::nullopt);
  o.progress = progress;
  if (!a.json.empty()) {
    // Find out now, not after minutes of measuring, that the report cannot be written.
    std::ofstream probe(a.json, std::ios::app);
    if (!probe) return report_error(Status::io("cannot write '" + a.json + "'"));
  }

  auto report = tools::run_bench(o);
  if (!report.ok()) return report_error(report.status());
  report->ferry_version = FERRY_VERSION;
  std::fputs(tools::format_bench_report(*report).c_str(), stdout);
  if (!a.json.empty()) {
    if (int rc = write_json_report(tools::bench_report_to_json(*report), a.json)) return rc;
    std::printf("wrote %s\n", a.json.c_str());
  }
  return 0;
}

}  // namespace

CommandFn add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure latency, throughput, load time and peak memory, optionally next to ONNX Runtime");
  cmd->add_option("MODEL", args->model, "the .onnx model or a compiled .ferry file (then pass --peer-model for peers)")->required();
  cmd->add_option("--batch", args->batches,
                  "batch sizes to measure, each in turn (dim 0 of every input; default: the model's own, 1 when "
                  "symbolic)")
      ->delimiter(',')
      ->check(at_least_one())
      ->type_name("B1,B2,...");
  // --backend, --opt-level, --threads as run and inspect have them; the peers get the same thread count.
  add_session_flags(cmd, args->session);
  auto* warm = cmd->add_option("--warmup", args->warmup,
                               "warmup iterations (default: 3 iterations and 200 ms, at most 1 s after the first)")
                   ->check(non_negative())
                   ->type_name("N");
  auto* warm_ms = cmd->add_option("--warmup-ms", args->warmup_ms, "warm up for T milliseconds instead")
                      ->check(non_negative())
                      ->type_name("T");
  warm->excludes(warm_ms);
  cmd->add_option("--iterations", args->iterations,
                  "measured iterations (default: 10 iterations and 3 s, at most 30 s after the first)")
      ->check(at_least_one())
      ->type_name("N");
  cmd->add_option("--duration", args->duration, "measure for at least S seconds (with --iterations: both)")
      ->check(positive())
      ->type_name("S");
  cmd->add_option("--json", args->json, "also write every figure as JSON (schema ferry.bench/1, docs/cli.md)")
      ->type_name("FILE");
  cmd->add_option("--peer", args->peers,
                  "also run this runtime on the same model and inputs, in a child process through the project "
                  "venv's python, and print ferry/peer ratios (repeatable); OpenVINO computes at ferry's --precision "
                  "(its INFERENCE_PRECISION_HINT), ONNX Runtime's CPU provider always in fp32")
      ->check(CLI::IsMember({"onnxruntime", "openvino"}))
      ->type_name("onnxruntime|openvino");
  cmd->add_option("--rounds", args->rounds,
                  "with --peer: split each batch's measurement into R rounds alternating ferry and the peers, "
                  "so a machine whose speed drifts affects both sides alike (default 3; 1: ferry, then each peer)")
      ->check(at_least_one())
      ->type_name("R");
  cmd->add_option("--peer-model", args->peer_model, "the .onnx file the peers run (needed for a .ferry MODEL)")
      ->type_name("FILE.onnx");
  add_input_flags(cmd, args->input,
                  "concrete shape for an input with dynamic dims other than the batch; dim 0 is replaced by "
                  "each --batch");
  return [args] { return run_bench_command(*args); };
}

}  // namespace ferry::cli
