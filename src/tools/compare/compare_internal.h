// Pieces of `ferry compare` shared by its files (not a public interface).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/compare/compare.h"
#include "runtime/model_session.h"

namespace ferry::tools::compare {

// One candidate value the run produced that carries an ONNX tensor name, in execution order.
struct Seen {
  std::string onnx_name;
  std::string node, op;
  std::vector<std::string> provenance;
  const ir::Value* value = nullptr;  // in the candidate's graph (null for dumped candidates)
};

struct CapturedRun {
  std::vector<std::pair<std::string, RtValue>> outputs;
  TensorMap tensors;       // by ONNX name (only when keep_tensors)
  std::vector<Seen> order;
  // NaN / Inf counts of every floating tensor seen (by ONNX name), kept even without keep_tensors.
  std::map<std::string, std::pair<int64_t, int64_t>> nonfinite;
};

// The node a row describes for a value `n` wrote: n itself, or, for a node a pass inserted (the precision
// pass's RoundFloat, which has no provenance), the node upstream that computed the value (through first
// inputs), so that no row or verdict names a node the user's model does not have.
const ir::Node& described_node(const ir::Node& n);
// The user's ONNX node for a value `n` wrote: the last ONNX node described_node(n) stands for (a fused
// node's output is its last covered node's output), else its name.
std::string onnx_node_of(const ir::Node& n);

// Runs with a node hook that records every output value with an ONNX name (a deep copy when
// keep_tensors, since kernels may reuse buffers) and counts NaN/Inf in floating ones. Graph inputs
// are recorded first.
Result<CapturedRun> run_capturing(runtime::ModelSession& runner, const std::map<std::string, RtValue>& feeds, bool keep_tensors);

// NaN and Inf counts of a floating tensor ({0, 0} for others).
std::pair<int64_t, int64_t> count_nonfinite(const Tensor& t);

// Loads DIR/<sanitize_name(name)>.npy for each name that has a file; names without one are skipped.
Result<TensorMap> load_dir(const std::string& dir, const std::vector<std::string>& names);

// Runs src/tools/compare/onnxruntime_golden.py in the project venv: every node output of the ONNX model
// exposed as a graph output, ORT optimizations off (they would fuse tensors away), inputs from
// `inputs_npz`; the tensors land in `out_dir` by the sanitize_name rule.
Status run_onnxruntime_golden(const std::string& model, const std::string& inputs_npz, const std::string& out_dir);

// For every layer row, runs the candidate nodes that compute its tensor from ONNX-named values (walking
// back through internal values) as a small graph fed with golden tensors, and fills Row::single_op.
Status run_single_op(const ir::Model& candidate, const std::map<std::string, const ir::Value*>& by_onnx,
                     const TensorMap& golden, const runtime::SessionOptions& so, const Thresholds& th,
                     std::vector<Row>& rows, const std::function<void(const std::string&)>& progress);

// The nodes of `g` (the model the dump is of) between the last matching rows and layers[divergent], walking
// up through tensors without a row; nullopt when the divergent node is fed by matching tensors only (span.cc).
std::optional<DivergenceSpan> divergence_span(const ir::Graph& g, const std::vector<Row>& layers, size_t divergent,
                                              const TensorMap& candidate);
// "first divergence between 'Relu.17' (last match) and 'BatchNormalization.18': nodes Conv.26,
// BatchNormalization.18; the dump lacks Conv.26's output 'conv26_out'"
std::string describe_span(const DivergenceSpan& s);

// Fills the advisor notes from outputs, layers, ranges and non-finite tensors.
void advise(CompareReport& r);

}  // namespace ferry::tools::compare
