// `ferry evaluate`: the fp32 golden and the target (its precision, emulated where the device is not here)
// over every sample of a data set, streaming: worker threads decode and preprocess while the sessions run,
// each sample's result goes to OUT/samples.jsonl as it is made, and an Aggregate (results.h) keeps what the
// report needs. The same Evaluator runs samples a Python iterable, a DataLoader or a Ray actor hands it.
#pragma once
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/tensor.h"
#include "runtime/model_session.h"
#include "runtime/session.h"
#include "tools/compare/metrics.h"
#include "tools/evaluate/results.h"
#include "tools/evaluate/samples.h"

namespace ferry::tools::evaluate {

// One model opened twice: the golden (fp32) and the target, with the same batch. Feeds are per sample
// (batch dim 1); a batch is stacked, run on both sessions, and split back into one result per sample.
class Evaluator {
 public:
  // `in_model`: the preprocessing's per-pixel part inserted into the model first (insert_preprocess), as
  // `ferry compile --preprocess` would; only for .onnx models (a .ferry file was compiled already).
  static Result<std::unique_ptr<Evaluator>> open(const std::string& model, runtime::SessionOptions golden,
                                                 runtime::SessionOptions target, int batch,
                                                 const compare::Thresholds& th = {},
                                                 const PreprocessSpec* in_model = nullptr);
  const std::vector<ModelInput>& inputs() const { return inputs_; }
  int batch() const { return batch_; }
  // Samples per evaluate() call: whole batches, up to 32 samples and 64 MiB of inputs.
  int chunk() const;
  // Up to chunk() samples, run batch by batch: every batch on the golden, then every batch on the target
  // (a short last batch is padded with copies of its last sample and the extra rows dropped). Results come
  // back with outputs and classes filled; index, id, path and label are the caller's.
  Result<std::vector<SampleResult>> evaluate(const std::vector<std::map<std::string, Tensor>>& samples);
  // Label correctness of a result (first classifier output), from the classes and top-5 it keeps.
  static void judge_label(SampleResult& r);
  std::string golden_label() const;
  std::string target_label() const;
  double golden_seconds() const { return golden_s_; }
  double target_seconds() const { return target_s_; }

 private:
  std::unique_ptr<runtime::ModelSession> golden_, target_;
  std::vector<ModelInput> inputs_;
  int batch_ = 1;
  compare::Thresholds th_;
  double golden_s_ = 0, target_s_ = 0;
};

// The golden's options for a target: fp32 on this CPU (cpu backend, opt level 2) with the target's threads,
// kernel choices and opset leniency.
runtime::SessionOptions golden_options_for(const runtime::SessionOptions& target);

struct EvaluateOptions {
  std::string model;
  std::string data;        // folder or manifest (samples.h)
  std::string labels;      // "", "folders" or a file of "ID LABEL" lines
  std::string preprocess;  // spec (preprocess.h); "" for none
  // Run the spec's per-pixel part inside the model (as `compile --preprocess` puts it) and feed the 8-bit
  // image: what the deployed model sees.
  bool preprocess_in_model = false;
  runtime::SessionOptions golden;  // fp32 by default: cpu backend, the CLI's opt level
  runtime::SessionOptions target;
  compare::Thresholds thresholds;
  int batch = 1;
  int workers = 0;  // decoding threads; 0: 2
  int worst = 20;   // worst cases kept (with their inputs saved for replay)
  int shard_index = 0, shard_count = 1;
  std::string out_dir;  // report.json, samples.jsonl, worst/; created
  // Called after every batch (done, total, samples per second so far).
  std::function<void(int64_t, int64_t, double)> progress;
};

struct Timing {
  double wall_s = 0;
  double data_wait_s = 0;   // the sessions waited for samples (the pipeline starving them)
  double data_work_s = 0;   // decoding and preprocessing, summed over the worker threads
  double golden_s = 0, target_s = 0;
  double open_s = 0;  // reading and preparing the model (golden and target), inside wall_s
  // Samples per second once the model is open (what a longer run converges to).
  double rate(int64_t samples) const;
};

struct EvaluateReport {
  std::string model, data, labels, preprocess, golden, target, target_flags;
  int batch = 1, workers = 0;
  int shard_index = 0, shard_count = 1;
  int64_t dataset_samples = 0;  // the whole data set, all shards
  std::vector<std::string> classes;  // --labels folders
  Aggregate aggregate;
  Timing timing;
  std::string out_dir, samples_file;
  std::vector<std::string> parts;  // --merge: the partial reports combined
  std::vector<std::string> notes;
  // "ferry compare MODEL --inputs <replay> <target flags>" for a worst case.
  std::string replay_command(const SampleResult& s) const;
};

// One evaluation in progress: the Evaluator, the Aggregate, samples.jsonl, and the inputs of the current
// worst cases. `ferry evaluate` feeds it from its decoding threads, ferry.evaluate from a Python iterable
// or DataLoader, and a Ray driver with results its actors computed (add_result); finish() saves the worst
// cases' inputs (kept, or decoded again from their files) and returns the report.
class Evaluation {
 public:
  // Opens the model (golden and target) and OUT (samples.jsonl). `data_description` names the data in the
  // report ("a DataLoader", or the --data path).
  static Result<std::unique_ptr<Evaluation>> start(const EvaluateOptions& o, const std::string& data_description,
                                                   int64_t dataset_samples);
  const std::vector<ModelInput>& inputs() const { return evaluator_->inputs(); }
  const Evaluator& evaluator() const { return *evaluator_; }
  const std::optional<PreprocessSpec>& preprocess() const { return pre_; }
  // Runs up to batch() samples; refs give each one's index, id, path and label. Returns their results
  // (already added).
  Result<std::vector<SampleResult>> run(std::vector<std::map<std::string, Tensor>> feeds,
                                        const std::vector<SampleRef>& refs, const std::vector<int64_t>& indices);
  // A result computed elsewhere (a Ray actor): aggregated and written like the rest.
  Status add_result(const SampleResult& r);
  Timing& timing() { return rep_.timing; }
  std::vector<std::string>& notes() { return rep_.notes; }
  Result<EvaluateReport> finish();

 private:
  Status record(const SampleResult& r, std::map<std::string, Tensor>* feeds);
  std::unique_ptr<Evaluator> evaluator_;
  std::optional<PreprocessSpec> pre_;
  EvaluateReport rep_;
  std::ofstream jsonl_;
  std::map<std::string, std::map<std::string, Tensor>> kept_;  // inputs of the current worst cases, by id
};

Result<EvaluateReport> run_evaluate(const EvaluateOptions& opts);

// `--merge`: partial reports (shards, or any split) combined into one, as if one run had done them all;
// they must be of the same model, target, golden, preprocessing and data set. Missing or repeated shards
// are errors.
Result<EvaluateReport> merge_reports(const std::vector<std::string>& files);

nlohmann::json report_to_json(const EvaluateReport& r);  // "ferry.evaluate/1" (docs/evaluate.md)
Result<EvaluateReport> report_from_json(const nlohmann::json& j, const std::string& where);
std::string format_report(const EvaluateReport& r);
std::string render_evaluate_html(const EvaluateReport& r);
// Writes OUT/report.json and OUT/report.html.
Status write_report_files(const EvaluateReport& r);

}  // namespace ferry::tools::evaluate
