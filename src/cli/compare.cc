// `ferry compare MODEL [--golden reference|onnxruntime|DIR|MODEL2] [--candidate DIR] [input flags]
// [session flags] [--layerwise] [--single-op] [--ranges] [--repro DIR] [--atol A --rtol R] [--cosine C --rel-euclid E]
// [--json FILE] [--csv FILE]`: how far the candidate is from the golden, per output and per ONNX
// tensor; exit 0 when every output passes, 3 when one does not (1: error, 2: usage).
#include <cstdio>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/text_file.h"
#include "frontend/onnx/import.h"
#include "cli/input_flags.h"
#include "cli/session_flags.h"
#include "passes/precision.h"
#include "targets/target.h"
#include "tools/compare/compare.h"

namespace ferry::cli {

namespace {

struct CompareArgs {
  std::string model;
  std::string golden = "reference";
  std::string candidate_dir;
  InputFlags input;
  SessionFlags session;
  bool layerwise = false, single_op = false, ranges = false;
  tools::compare::Thresholds th;
  std::string json, csv, repro;
};

int run_compare_cmd(const CompareArgs& a) {
  auto inputs = input_options(a.input);
  if (!inputs.ok()) return report_error(inputs.status());
  auto golden = tools::compare::parse_golden(a.golden);
  if (!golden.ok()) return report_error(golden.status());
  tools::compare::CompareOptions o;
  o.model = a.model;
  o.candidate = session_options(a.session);
  o.candidate_dir = a.candidate_dir;
  o.golden = *golden;
  o.inputs = *inputs;
  o.layerwise = a.layerwise;
  o.single_op = a.single_op;
  o.ranges = a.ranges;
  o.repro_dir = a.repro;
  o.thresholds = a.th;
  o.progress = progress;
  // The golden and the candidate both open the model: it is read and imported once.
  frontend::ImportCache import_cache;
  auto rep = tools::compare::run_compare(o);
  if (!rep.ok()) return report_error(rep.status());
  std::fputs(tools::compare::format_report(*rep).c_str(), stdout);
  if (!a.json.empty()) {
    Status st = write_text_file(a.json, tools::compare::report_to_json(*rep).dump(2) + "\n");
    if (!st.ok()) return report_error(st);
    std::printf("wrote %s\n", a.json.c_str());
  }
  if (!a.csv.empty()) {
    Status st = write_text_file(a.csv, tools::compare::report_to_csv(*rep));
    if (!st.ok()) return report_error(st);
    std::printf("wrote %s\n", a.csv.c_str());
  }
  return rep->pass() ? 0 : 3;
}

}  // namespace

CommandFn add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare a model's outputs (and, with --layerwise, every ONNX tensor that survives optimization) against a "
      "golden run; exit 0 when every output passes, 3 when one does not");
  cmd->add_option("MODEL", a->model, "the model (.onnx, or .ferry from `ferry compile`)")->required();
  cmd->add_option("--golden", a->golden,
                  "what to compare against: 'reference' (the reference backend at opt level 0; default), 'onnxruntime' "
                  "(ONNX Runtime in the project venv, every intermediate exposed, its optimizations off), a folder of "
                  ".npy files named by ONNX tensor names (as `ferry run --dump` writes), or another model file run on "
                  "the reference backend (model-vs-model)")
      ->type_name("reference|onnxruntime|DIR|MODEL");
  cmd->add_option("--candidate", a->candidate_dir,
                  "compare a folder of .npy files dumped elsewhere (a real NPU, a GPU, another runtime), named by ONNX "
                  "tensor names with `ferry run`'s file-name rule, instead of running the model here")
      ->type_name("DIR");
  add_input_flags(cmd, a->input);
  add_session_flags(cmd, a->session);
  cmd->add_flag("--layerwise", a->layerwise,
                "also compare every ONNX tensor the candidate's graph keeps (a fused kernel's output against the golden "
                "tensor of the last ONNX node it covers) and name the first divergent node");
  cmd->add_flag("--single-op", a->single_op,
                "re-run each compared node (with the internals of its fusion) on golden inputs, to tell its own error "
                "from inherited error (implies --layerwise)");
  cmd->add_flag("--ranges", a->ranges,
                "record each golden tensor's min/max/absmax and the fraction outside fp16's range or below its "
                "smallest normal, and name the tensors that would overflow or flush in fp16/bf16");
  cmd->add_option("--repro", a->repro,
                  "write a standalone reproduction of the first divergent node to DIR: the subgraph as .onnx with its "
                  "weights, its inputs (golden values) as .npz, the golden output, and a README.md with the metrics and "
                  "the one `ferry compare` command that reproduces them (implies --layerwise)")
      ->type_name("DIR");
  cmd->add_option("--cosine", a->th.cosine_min, "pass threshold: cosine similarity at least C (default 0.99)")
      ->check(CLI::Range(-1.0, 1.0))
      ->type_name("C");
  cmd->add_option("--rel-euclid", a->th.rel_euclid_max,
                  "pass threshold: relative Euclidean distance at most E (default 0.05)")
      ->check(non_negative())
      ->type_name("E");
  cmd->add_option("--atol", a->th.atol, "absolute tolerance of the allclose verdict (default 1e-4)")
      ->check(non_negative())
      ->type_name("A");
  cmd->add_option("--rtol", a->th.rtol, "relative tolerance of the allclose verdict (default 1e-3)")
      ->check(non_negative())
      ->type_name("R");
  cmd->add_option("--json", a->json, "write the report as JSON (schema ferry.compare/1, docs/compare.md)")
      ->type_name("FILE");
  cmd->add_option("--csv", a->csv, "write one CSV row per output and compared tensor")->type_name("FILE");
  return [a] { return run_compare_cmd(*a); };
}

}  // namespace ferry::cli
