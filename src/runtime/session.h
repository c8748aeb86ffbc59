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
#include "runtime/prepare.h"

namespace ferry::runtime {

// How a model is prepared (PrepareOptions: shapes, opt level, precision, target; prepare.h) and run.
// One struct through every command, so what one stage was told every stage knows.
struct SessionOptions : PrepareOptions {
  std::string backend = "reference";
  // Threads for the cpu backend's kernels and which kernels it takes where it has a choice.
  backends::BackendOptions backend_options;
  // Place static intermediates in one planned arena (executor.h). Off: every tensor is allocated as it
  // is produced (for debugging memory issues and measuring what the arena saves).
  bool memory_arena = true;
  // Load a model whose default-domain opset is newer than ferry knows (frontend::ImportOptions).
  bool allow_newer_opset = false;
  // Memory budget in bytes (runtime/memory_budget.h); 0: the machine's physical memory. A model whose
  // declared shapes or memory plan need more is refused at load, before anything is allocated.
  int64_t max_memory = 0;
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
  // Loads an ONNX file, imports it, prepares it (prepare.h) and plans it. (ModelSession::open also
  // opens .ferry files and picks gears.)
  static Result<std::unique_ptr<Session>> load(const std::string& path, const SessionOptions& opts = {});
  // Prepares `model` with opts (prepare.h) and plans it.
  static Result<std::unique_ptr<Session>> from_model(std::unique_ptr<ir::Model> model,
                                                     const SessionOptions& opts = {});
  // A model prepared already (a .ferry file's graph): only planned. `report` says how it was prepared.
  static Result<std::unique_ptr<Session>> from_prepared(std::unique_ptr<ir::Model> model, const SessionOptions& opts,
                                                        PrepareReport report);

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
  // How the model was prepared: passes, precision, placement.
  const PrepareReport& prepare_report() const { return prepared_; }
  // What each optimization pass did at load (empty at opt_level 0).
  const std::vector<passes::PassReport>& pass_reports() const { return prepared_.passes; }
  // What the precision pass did at load (mode fp32 and zero counts when it did not run).
  const passes::PrecisionReport& precision_report() const { return prepared_.precision; }
  // "ascend310p (emulated on this CPU: ...)", "" without a target.
  std::string target_label() const { return runtime::target_label(prepared_); }
  // The precision that ran, described with what the backend says of bf16 (native or emulated).
  std::string precision_description() const;
  // The backend's kernel choices on this machine (cpu: GEMM, bf16, ...), one line each.
  std::vector<std::string> kernel_choices() const;
  // The prepared executor: kernels per node and the memory plan (for `inspect --plan`).
  const Executor& executor() const { return *executor_; }

 private:
  Session() = default;
  std::unique_ptr<ir::Model> model_;
  std::unique_ptr<class Executor> executor_;
  SessionOptions opts_;
  PrepareReport prepared_;
  NodeHook hook_;
  HookMode hook_mode_ = HookMode::kKeep;
  std::mutex run_mutex_;
};

}  // namespace ferry::runtime
