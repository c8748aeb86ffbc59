// `ferry evaluate MODEL --data SRC -o DIR [--labels FILE|folders] [--preprocess SPEC] [session flags]
// [--batch N] [--workers N] [--worst N] [--shard i/N]` and `ferry evaluate --merge PART.json... -o DIR`:
// the golden and the target over a data set; OUT/report.json, report.html, samples.jsonl and worst/*.npz.
// Exit 0 when every sample's outputs pass, 3 when some do not (1: error, 2: usage).
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/session_flags.h"
#include "tools/bench.h"
#include "tools/evaluate/evaluate.h"

namespace ferry::cli {

namespace {

struct EvaluateArgs {
  std::string model, data, labels, preprocess, out, shard, ray;
  bool use_ray = false, preprocess_in_model = false;
  int actors = 2;
  std::vector<std::string> merge;
  SessionFlags session;
  int batch = 1, workers = 0, worst = 20;
  tools::compare::Thresholds th;
};

int finish(const tools::evaluate::EvaluateReport& rep) {
  Status st = tools::evaluate::write_report_files(rep);
  if (!st.ok()) return report_error(st);
  std::fputs(tools::evaluate::format_report(rep).c_str(), stdout);
  std::printf("wrote %s/report.json and %s/report.html\n", rep.out_dir.c_str(), rep.out_dir.c_str());
  for (auto& o : rep.aggregate.outputs())
    if (o.passed != o.samples) return 3;
  return 0;
}

// --ray: the evaluation through Ray Data, by the Python package (python/ferry/ray.py), run by the project's
// python with the same arguments; its exit code is ours.
int run_on_ray(const EvaluateArgs& a) {
  auto python = tools::peer_python();
  if (!python.ok()) return report_error(python.status());
  std::vector<std::string> args = {*python, "-m", "ferry.ray", a.model, "--data", a.data, "-o", a.out,
                                   "--actors", std::to_string(a.actors), "--batch", std::to_string(a.batch),
                                   "--worst", std::to_string(a.worst), "--cosine", std::to_string(a.th.cosine_min),
                                   "--rel-euclid", std::to_string(a.th.rel_euclid_max)};
  auto add = [&](const char* flag, const std::string& v) {
    if (!v.empty()) args.insert(args.end(), {flag, v});
  };
  add("--address", a.ray);
  add("--labels", a.labels);
  add("--preprocess", a.preprocess);
  add("--target", a.session.target);
  add("--precision", a.session.precision);
  if (a.session.threads > 0) add("--threads", std::to_string(a.session.threads));
  if (!a.shard.empty()) return report_error(Status::invalid("--ray and --shard: Ray splits the work itself"));
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(python->c_str(), argv.data());
  return report_error(Status::io("cannot run " + *python + " for --ray"));
}

int run_evaluate_cmd(const EvaluateArgs& a) {
  if (!a.merge.empty()) {
    auto rep = tools::evaluate::merge_reports(a.merge);
    if (!rep.ok()) return report_error(rep.status());
    rep->out_dir = a.out;
    return finish(*rep);
  }
  if (a.model.empty() || a.data.empty()) return report_error(Status::invalid("evaluate: give MODEL and --data SRC (or --merge)"));
  if (a.use_ray) return run_on_ray(a);
  tools::evaluate::EvaluateOptions o;
  o.model = a.model;
  o.data = a.data;
  o.labels = a.labels;
  o.preprocess = a.preprocess;
  o.preprocess_in_model = a.preprocess_in_model;
  o.target = session_options(a.session);
  o.golden = tools::evaluate::golden_options_for(o.target);
  o.thresholds = a.th;
  o.batch = a.batch;
  o.workers = a.workers;
  o.worst = a.worst;
  o.out_dir = a.out;
  if (!a.shard.empty()) {
    auto s = tools::evaluate::parse_shard(a.shard);
    if (!s.ok()) return report_error(s.status());
    std::tie(o.shard_index, o.shard_count) = *s;
  }
  o.progress = [](int64_t done, int64_t total, double rate) { progress_bar("evaluate", done, total, rate, "samples"); };
  auto rep = tools::evaluate::run_evaluate(o);
  if (!rep.ok()) return report_error(rep.status());
  return finish(*rep);
}

}  // namespace

CommandFn add_evaluate_command(CLI::App& app) {
  auto a = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate",
      "Run the fp32 golden and the target (--precision, --target: emulated where the device is not here) over a "
      "data set: per-output metric percentiles, top-1/top-5 agreement, accuracy against labels, the worst samples "
      "(saved for `ferry compare` to replay); exit 0 when every sample passes, 3 when some do not");
  cmd->add_option("MODEL", a->model, "the model (.onnx, or .ferry from `ferry compile`)");
  cmd->add_option("--data", a->data,
                  "a folder (searched recursively, sorted) of images (.jpg/.jpeg/.png) and tensors (.npy: the model's "
                  "one input; .npz: inputs by name), or a manifest file listing them one per line ('PATH [LABEL]', "
                  "relative to the manifest)")
      ->type_name("SRC");
  cmd->add_option("-o,--out", a->out, "folder for report.json, report.html, samples.jsonl and worst/")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--labels", a->labels,
                  "class labels: a file of 'SAMPLE_ID CLASS_INDEX' lines (ids are paths relative to --data), or "
                  "'folders' (ImageFolder's rule: the index of the sample's class folder among the sorted folders)")
      ->type_name("FILE|folders");
  cmd->add_option("--preprocess", a->preprocess,
                  "how images become tensors, as data: 'imagenet' or key=value pairs: resize=N (shorter side), crop=N "
                  "or HxW (center), order=rgb|bgr, scale=1/255, mean=a:b:c, std=a:b:c, layout=nchw|nhwc, "
                  "dtype=float32|float16|uint8 (e.g. 'imagenet,crop=160'), or a .json file with those keys")
      ->type_name("SPEC");
  cmd->add_flag("--preprocess-in-model", a->preprocess_in_model,
                "run --preprocess's per-pixel part inside the model, as `ferry compile --preprocess` puts it, and feed "
                "the resized and cropped 8-bit image (what the deployed model sees)");
  add_session_flags(cmd, a->session);
  cmd->add_option("--batch", a->batch, "samples per run (the model's batch dim must be dynamic for more than 1)")
      ->check(at_least_one())
      ->type_name("N");
  cmd->add_option("--workers", a->workers, "threads decoding and preprocessing ahead of the model (default 2)")
      ->check(at_least_one())
      ->type_name("N");
  cmd->add_option("--worst", a->worst, "how many worst samples to list and save for replay (default 20)")
      ->check(CLI::Range(0, 100000))
      ->type_name("N");
  cmd->add_option("--shard", a->shard,
                  "evaluate only shard i of N (samples i, i+N, ...) and write a partial report for --merge: for "
                  "launchers such as Slurm, torchrun or mpirun")
      ->type_name("i/N");
  cmd->add_option("--ray", a->ray,
                  "run on a Ray cluster through Ray Data (the Python package's ferry.ray): ADDRESS of a running "
                  "cluster ('auto', HOST:PORT), or none to start a local one for this run; the same report")
      ->expected(0, 1)
      ->type_name("[ADDRESS]");
  cmd->add_option("--actors", a->actors, "with --ray: evaluation actors, each with --threads CPUs (default 2)")
      ->check(at_least_one())
      ->type_name("N");
  cmd->add_option("--merge", a->merge, "combine the report.json of every shard into one report (no MODEL needed)")
      ->type_name("PART.json...")
      ->expected(1, -1);
  cmd->add_option("--cosine", a->th.cosine_min, "a sample's output passes with cosine at least C (default 0.99)")
      ->check(CLI::Range(-1.0, 1.0))
      ->type_name("C");
  cmd->add_option("--rel-euclid", a->th.rel_euclid_max,
                  "... and relative Euclidean distance at most E (default 0.05)")
      ->check(non_negative())
      ->type_name("E");
  return [a, cmd] {
    a->use_ray = cmd->count("--ray") > 0;
    return run_evaluate_cmd(*a);
  };
}

}  // namespace ferry::cli
