// ModelSession: the runtime's one door to a model file. open() tells an ONNX model from a compiled
// .ferry file by content (the .ferry identifier), not by the file name, validates it, prepares it
// (prepare.h; a .ferry file was prepared when it was compiled and is only planned), and for a file
// compiled with gears holds one prepared Session per gear and picks the gear from the inputs' shapes,
// so callers use the same inputs()/outputs()/run() whichever file they opened.
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
#include "runtime/dynamic_shapes.h"
#include "runtime/session.h"

namespace ferry::runtime {

enum class ModelFileKind { kOnnx, kFerry };

// kFerry when the file starts like a .ferry file, else kOnnx (whose importer reports what is wrong).
ModelFileKind detect_model_file(const std::string& path);

// The graph only, as stored, for tools that look at a model without running it (inspect, check). For
// .onnx files `import` applies (e.g. check_ops = false to inspect a model ferry cannot run yet).
Result<std::unique_ptr<ir::Model>> open_model(const std::string& path, const frontend::ImportOptions& import = {});

// Metadata keys a compiled file carries besides its compile options: the nodes its target placed on
// the host ("name<TAB>placement<TAB>reason" lines), so reports on the file count what compile decided.
inline constexpr const char* kHostNodesKey = "ferry.host_nodes";

class ModelSession {
 public:
  ~ModelSession();
  // Opens and prepares `path` (.onnx or .ferry). For a .ferry file, options that decide preparation
  // (target, precision) must match how it was compiled, or the error says to recompile; its target and
  // precision are then the file's, and every report says what actually ran.
  static Result<std::unique_ptr<ModelSession>> open(const std::string& path, const SessionOptions& opts = {});
  // Prepares an imported model (the caller keeps its own copy when it needs the graph again: clone()).
  static Result<std::unique_ptr<ModelSession>> from_model(std::unique_ptr<ir::Model> model, const SessionOptions& opts);

  ModelFileKind kind() const { return kind_; }
  // The model as stored (for a geared model: the graph with the symbolic dims).
  const ir::Model& model() const;
  const ir::Graph& graph() const { return *model().graph; }
  std::vector<InputInfo> inputs() const;
  std::vector<InputInfo> outputs() const;
  // Dynamic-batch gears (empty: one session, shapes as stored).
  const std::vector<int64_t>& gears() const { return gears_; }
  // How a .ferry file was compiled; null for .onnx.
  const format::CompileOptions* compile_options() const { return ferry_ ? &options_ : nullptr; }

  // Runs on the session for the inputs' shapes. Errors name the input, and for an input that fits no
  // gear, the gears ("input 'x' has batch 3; this model was compiled for batch sizes 1, 2, 4, 8").
  Result<std::vector<std::pair<std::string, RtValue>>> run(const std::map<std::string, RtValue>& inputs);
  Result<std::vector<std::pair<std::string, Tensor>>> run_tensors(const std::map<std::string, Tensor>& inputs);
  void set_node_hook(NodeHook hook, HookMode mode = HookMode::kKeep);

  // The session for gear i (or the only session, i = 0).
  Session& session(size_t i = 0) { return *sessions_[i]; }
  const Session& session(size_t i = 0) const { return *sessions_[i]; }
  size_t num_sessions() const { return sessions_.size(); }
  // Index of the session that runs these inputs.
  Result<size_t> pick_session(const std::map<std::string, RtValue>& inputs) const;

 private:
  ModelSession() = default;
  Status open_ferry(const std::string& path, const SessionOptions& opts);
  ModelFileKind kind_ = ModelFileKind::kOnnx;
  bool ferry_ = false;
  format::CompileOptions options_;
  std::unique_ptr<ir::Model> stored_;  // geared models only
  std::vector<int64_t> gears_;
  // --dynamic-dims gears (one session each) over these input dims; --input-shape ranges.
  std::vector<std::vector<int64_t>> dims_gears_;
  std::vector<std::pair<std::string, int>> dims_positions_;
  InputRanges ranges_;
  std::vector<std::unique_ptr<Session>> sessions_;
};

// "1, 2, 4, 8"
std::string gears_to_string(const std::vector<int64_t>& gears);

}  // namespace ferry::runtime
