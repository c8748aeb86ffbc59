// Session: load a model, plan it, run it. The reference backend executes every node with the op's
// reference kernel; a per-node hook lets tools observe every intermediate tensor.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "passes/precision.h"

namespace ferry::runtime {

struct SessionOptions {
  std::string backend = "reference";
  // Concrete shapes for inputs (by input name, e.g. from `--shape`): fixed in the graph at load, so
  // shapes re-infer statically, shape subgraphs fold and the memory planner can place more tensors.
  // They must agree with the declared rank and static dims; runs must then feed exactly these shapes.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Graph optimization level for passes::optimize (0: none ... 3, see passes/pipeline.h). The library
  // default is 0 (the graph runs as imported); the CLI defaults to 2.
  int opt_level = 0;
  // Threads for the cpu backend's kernels (OpenMP; process-wide); 0 keeps the default (all cores).
  int threads = 0;
  // Place static intermediates in one planned arena (executor.h). Off: every tensor is allocated as it
  // is produced (for debugging memory issues and measuring what the arena saves).
  bool memory_arena = true;
  // Precision mode (passes/precision.h), applied after the optimizer: fp16/bf16 storage emulation,
  // mixed lists, keep-fp32 entries. fp32 (the default) changes nothing.
  passes::PrecisionOptions precision;
  // A target (targets/target.h: built-in name or profile file). Its backend runs the model; nodes its
  // device cannot run (host fallback, unsupported) stay fp32 on the host; a target without a local
  // device (ascend*) is emulated: its numerics on this CPU. When `precision_given` is false the
  // target's default precision applies (Ascend: fp16, as ATC).
  std::string target;
  bool precision_given = true;
  // Load a model whose default-domain opset is newer than ferry knows (frontend::ImportOptions).
  bool allow_newer_opset = false;
};

// Called after each top-level node ran: the node, its inputs and its outputs.
using NodeHook = std::function<void(const ir::Node& node, const std::vector<const RtValue*>& inputs,
                                    const std::vector<RtValue>& outputs)>;
// kKeep: the hook may keep the tensors it sees, so they are never in the memory arena, and they are
// handed over in plain layout. kObserve: the hook only looks while it is called (timing, byte counts),
// so the run is the normal one: arena in use, tensors in whatever layout the kernels keep between them.
enum class HookMode { kKeep, kObserve };

struct InputInfo {
  std::string name;
  DType dtype;
  std::optional<Shape> shape;
};

class Executor;

class Session {
 public:
  ~Session();
  // Loads a model file (.onnx), imports it, infers shapes, prepares the plan.
  static Result<std::unique_ptr<Session>> load(const std::string& path, const SessionOptions& opts = {});
  static Result<std::unique_ptr<Session>> from_model(std::unique_ptr<ir::Model> model,
                                                     const SessionOptions& opts = {});

  const ir::Model& model() const { return *model_; }
  const ir::Graph& graph() const { return *model_->graph; }
  // The graph inputs a caller must feed (initializers excluded unless also graph inputs).
  std::vector<InputInfo> inputs() const;
  std::vector<InputInfo> outputs() const;

  // Runs the model. One run at a time per Session: the session's memory arena is reused by every run,
  // so concurrent calls are serialized (use one Session per thread to run in parallel).
  // Inputs are checked against the declared dtypes and static dims (errors name the
  // input); missing or unknown inputs are errors. Returns outputs by graph output name, in order.
  Result<std::vector<std::pair<std::string, RtValue>>> run(const std::map<std::string, RtValue>& inputs);
  // Tensor-only convenience.
  Result<std::vector<std::pair<std::string, Tensor>>> run_tensors(const std::map<std::string, Tensor>& inputs);

  // Set before run(). With kKeep (compare, dumps) intermediates are not placed in the session's memory
  // arena while a hook is set; with kObserve (profile) the run is the one `bench` times.
  void set_node_hook(NodeHook hook, HookMode mode = HookMode::kKeep) {
    hook_ = std::move(hook);
    hook_mode_ = mode;
  }

  const SessionOptions& options() const { return opts_; }
  // What each optimization pass did at load (empty at opt_level 0).
  const std::vector<passes::PassReport>& pass_reports() const { return pass_reports_; }
  // What the precision pass did at load (mode fp32 and zero counts when it did not run).
  const passes::PrecisionReport& precision_report() const { return precision_report_; }
  // "ascend310p (emulated on this CPU: ...)", "" without a target.
  const std::string& target_label() const { return target_label_; }
  // The prepared executor: kernels per node and the memory plan (for `inspect --plan`).
  const Executor& executor() const { return *executor_; }

 private:
  Session() = default;
  std::unique_ptr<ir::Model> model_;
  std::unique_ptr<class Executor> executor_;
  SessionOptions opts_;
  std::vector<passes::PassReport> pass_reports_;
  passes::PrecisionReport precision_report_;
  std::string target_label_;
  NodeHook hook_;
  HookMode hook_mode_ = HookMode::kKeep;
  std::mutex run_mutex_;
};

}  // namespace ferry::runtime
