// `ferry compare`: runs a golden and a candidate on the same inputs and says how far apart they are,
// per output and (layerwise) per ONNX tensor that survives in the candidate's graph, which ONNX node
// diverges first, and why (advisor). The candidate is the model under the user's session options
// (backend, opt level, precision, target) or a folder of tensors dumped elsewhere; the golden is the
// reference backend at opt level 0, ONNX Runtime with every intermediate exposed, another model run
// on the reference backend, or a folder of .npy files (`ferry run --dump`'s naming rule).
//
// Alignment through fused graphs: every value of the candidate graph carries the ONNX tensor name it
// stands for (onnx_name; a fused node's output keeps the name of its last covered node's output), so
// a row pairs the candidate value with the golden tensor of that name and names the ONNX node that
// produced it in the original model. Values without an ONNX counterpart (internal to a rewrite, or
// introduced by the precision pass before rounding) are not compared.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/tensor.h"
#include "runtime/session.h"
#include "tools/compare/metrics.h"
#include "tools/run_inputs.h"

namespace ferry::tools::compare {

// Tensors by ONNX tensor name.
using TensorMap = std::map<std::string, Tensor>;

struct GoldenSpec {
  enum class Kind { kReference, kOnnxRuntime, kDir, kModel };
  Kind kind = Kind::kReference;
  std::string path;  // kDir: the folder; kModel: the other model file
};
// "reference", "onnxruntime", a folder (of .npy files) or a model file (.onnx/.ferry: run on the
// reference backend at opt level 0). Errors name the argument.
Result<GoldenSpec> parse_golden(const std::string& arg);
std::string describe(const GoldenSpec& g);

struct CompareOptions {
  std::string model;
  runtime::SessionOptions candidate;  // the user's session flags (backend, opt level, precision, ...)
  std::string candidate_dir;          // --candidate DIR: tensors dumped elsewhere instead of a run
  GoldenSpec golden;
  InputOptions inputs;
  bool layerwise = false;
  bool single_op = false;  // implies layerwise
  bool ranges = false;
  Thresholds thresholds;
  // --repro DIR: a standalone reproduction of the first divergent node (repro.h); implies layerwise.
  std::string repro_dir;
  std::function<void(const std::string&)> progress;
};

struct Row {
  std::string tensor;        // ONNX tensor name
  std::string onnx_node;     // the ONNX node that produced it in the original model ("" for outputs fed by inputs)
  std::string op_type;       // of that ONNX node
  std::string candidate_node;              // the candidate node that computed it (may be fused)
  std::string candidate_op;                // its op type ("com.ferry.FusedConv")
  std::vector<std::string> provenance;     // ONNX nodes the candidate node covers
  std::string dtype;                       // candidate dtype
  std::vector<int64_t> shape;
  std::optional<Metrics> metrics;          // absent when it could not be compared (see note)
  std::string note;
  // --single-op: the same unit run on golden inputs, so the error is this node's own.
  std::optional<Metrics> single_op;
  std::string single_op_note;
  int single_op_nodes = 0;                 // candidate nodes in the unit
  bool pass() const { return metrics && metrics->pass; }
};

struct RangeRow {
  std::string tensor, onnx_node;
  int64_t count = 0, nonfinite = 0;
  double min = 0, max = 0, absmax = 0;
  double fp16_overflow = 0;   // fraction of values with |x| > 65504
  double fp16_underflow = 0;  // fraction of non-zero values with |x| < 2^-14 (fp16's smallest normal)
  double bf16_overflow = 0;   // fraction with |x| > bf16's largest finite value
  double bf16_underflow = 0;  // fraction of non-zero values below 2^-126
};

struct AdvisorNote {
  std::string kind;  // "overflow", "nan", "accumulated", "single-point", "own-error", "inherited", "ok", "outputs"
  std::string message;
};

// Where a first divergence may have started when the candidate lacks tensors upstream of it (a device dump
// without the tensors the device fused): every node between the last matching tensors and the divergent one.
struct DivergenceSpan {
  std::string last_match, last_match_tensor;  // the ONNX node and tensor of the last match ("": the inputs)
  std::vector<std::string> nodes;             // ONNX nodes in topological order; the divergent node last
  std::vector<std::pair<std::string, std::string>> lacked;  // (node, tensor): outputs the candidate lacks
};

struct CompareReport {
  std::string model;
  std::string golden;     // describe(GoldenSpec)
  std::string candidate;  // candidate label or "dumps in DIR"
  Thresholds thresholds;
  std::vector<PreparedInput> inputs;
  std::vector<Row> outputs;
  bool layerwise = false, single_op = false, ranges = false;
  std::vector<Row> layers;           // candidate order (topological)
  int64_t layers_missing = 0;        // candidate values with an ONNX name the golden lacks
  std::optional<size_t> first_divergent;  // index into layers
  std::optional<DivergenceSpan> divergence_span;  // --candidate DIR: set when uncompared nodes precede it
  std::vector<RangeRow> range_rows;
  std::vector<std::string> fp16_overflow, fp16_underflow, bf16_overflow, bf16_underflow;  // tensor names
  // Candidate tensors (any, layerwise or not) that hold NaN/Inf where the golden is finite, in order.
  std::vector<std::string> nonfinite_tensors;
  std::optional<double> first_nonfinite_golden_absmax;  // the golden's absmax at the first of them
  std::vector<AdvisorNote> advisor;
  std::vector<std::string> notes;
  // --repro: where the bundle went and the command that reproduces the divergence ("" when none).
  std::string repro_dir, repro_command;
  bool pass() const;  // every output passes
};

Result<CompareReport> run_compare(const CompareOptions& opts);

// Building blocks for tools that judge many candidates against one golden (tune-precision):
// The reference golden of `model` (reference backend, opt level 0) on `feeds`: its outputs, and every
// intermediate by ONNX name when keep_intermediates. `allow_newer_opset` as in SessionOptions.
Result<TensorMap> run_reference_golden(const std::string& model, const std::map<std::string, RtValue>& feeds,
                                       const std::map<std::string, std::vector<int64_t>>& input_shapes,
                                       bool keep_intermediates, int threads = 0, bool allow_newer_opset = false);
// One row per tensor output (non-tensor outputs are skipped; an output the golden lacks gets a row
// without metrics, which does not pass). Classifier outputs get top-1/top-5.
std::vector<Row> compare_outputs(const std::vector<std::pair<std::string, RtValue>>& outputs, const TensorMap& golden,
                                 const Thresholds& th);

// Human text (tables), JSON ("ferry.compare/1", schema in docs/compare.md) and CSV (one row per
// output and layer).
std::string format_report(const CompareReport& r);
nlohmann::json report_to_json(const CompareReport& r);
std::string report_to_csv(const CompareReport& r);

// Range statistics of one tensor (floating tensors; others give nullopt).
std::optional<RangeRow> range_of(const std::string& name, const Tensor& t);

}  // namespace ferry::tools::compare
