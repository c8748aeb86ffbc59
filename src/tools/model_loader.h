// One place that opens a model file for the CLI verbs (run, inspect, bench): an ONNX model or a
// compiled .ferry file, told apart by content (the .ferry identifier), not by the file name.
// A .ferry file compiled with dynamic-batch gears holds one graph with a symbolic batch dim; it runs
// through one prepared Session per gear, and ModelRunner picks the gear from the inputs' batch, so
// callers use the same inputs()/outputs()/run() whichever file they opened.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "format/ferry_file.h"
#include "frontend/onnx/import.h"
#include "ir/graph.h"
#include "runtime/session.h"

namespace ferry::tools {

enum class ModelFileKind { kOnnx, kFerry };

// kFerry when the file starts like a .ferry file, else kOnnx (whose importer reports what is wrong).
ModelFileKind detect_model_file(const std::string& path);

// The graph only, for tools that look at a model without running it (inspect). For .onnx files
// `import` applies (e.g. check_ops = false to inspect a model ferry cannot run yet).
Result<std::unique_ptr<ir::Model>> open_model(const std::string& path, const frontend::ImportOptions& import = {});

class ModelRunner {
 public:
  ~ModelRunner();
  ModelFileKind kind() const { return kind_; }
  // The model as stored (for a geared model: the graph with the symbolic batch dim).
  const ir::Model& model() const;
  const ir::Graph& graph() const { return *model().graph; }
  std::vector<runtime::InputInfo> inputs() const;
  std::vector<runtime::InputInfo> outputs() const;
  // Dynamic-batch gears (empty: one session, shapes as stored).
  const std::vector<int64_t>& gears() const { return gears_; }
  // How a .ferry file was compiled; null for .onnx.
  const format::CompileOptions* compile_options() const { return ferry_ ? &options_ : nullptr; }

  // Runs on the session for the inputs' batch. Errors name the input, and for an input that fits no
  // gear, the gears ("input 'x' has batch 3; this model was compiled for batch sizes 1, 2, 4, 8").
  Result<std::vector<std::pair<std::string, RtValue>>> run(const std::map<std::string, RtValue>& inputs);
  Result<std::vector<std::pair<std::string, Tensor>>> run_tensors(const std::map<std::string, Tensor>& inputs);
  void set_node_hook(runtime::NodeHook hook);

  // The session for gear i (or the only session, i = 0).
  runtime::Session& session(size_t i = 0) { return *sessions_[i]; }
  size_t num_sessions() const { return sessions_.size(); }
  // Index of the session that runs these inputs.
  Result<size_t> pick_session(const std::map<std::string, RtValue>& inputs) const;

 private:
  friend Result<std::unique_ptr<ModelRunner>> open_session(const std::string&, const runtime::SessionOptions&);
  ModelRunner() = default;
  ModelFileKind kind_ = ModelFileKind::kOnnx;
  bool ferry_ = false;
  format::CompileOptions options_;
  std::unique_ptr<ir::Model> stored_;  // geared models only
  std::vector<int64_t> gears_;
  // --dynamic-dims gears (one session each) over these input dims; --input-shape ranges.
  std::vector<std::vector<int64_t>> dims_gears_;
  std::vector<std::pair<std::string, int>> dims_positions_;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> ranges_;
  std::vector<std::unique_ptr<runtime::Session>> sessions_;
};

// Loads and prepares a model for running: .onnx through Session::load; .ferry through the format
// reader and Session::from_model (its graph is already optimized, so it is not optimized again),
// one session per gear for a geared file.
Result<std::unique_ptr<ModelRunner>> open_session(const std::string& path, const runtime::SessionOptions& opts = {});

// Fixes dim 0 of every graph input of `model` to `batch` and re-runs the optimizer at `opt_level`, so
// shape computations fold for this gear. Used at load (one model per gear) and by `ferry compile`.
Status specialize_batch(ir::Model& model, int64_t batch, int opt_level);

// "1, 2, 4, 8"
std::string gears_to_string(const std::vector<int64_t>& gears);

}  // namespace ferry::tools
