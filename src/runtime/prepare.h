// prepare(): the one place a model is prepared to run. Every command (run, compile, check, compare,
// tune-precision, bench, profile, migrate) and the library's Session go through it, so the same options
// give the same prepared graph whichever asked. The steps, in order:
//
//   fix shapes   --shape dims (symbolic dims bound consistently across inputs) or a batch gear
//   cleanup      level-1 passes (folding, identities, dead code) when a target is given, so that what
//                gets placed is what will run (a Shape chain that folds is on no device)
//   place        each node on the target's device, rewritten, or on the host (targets/placement.h);
//                host nodes are kept fp32 (by their ONNX names, which keep-lists match through fusion)
//   optimize     the pass pipeline at opt_level (passes/pipeline.h)
//   precision    fp16/bf16/mixed with keep lists (passes/precision.h); the target's default mode
//                when no precision was given
//
// The memory plan and kernel choice follow in the Executor (executor.h), which Session runs.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_options.h"
#include "core/status.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "passes/precision.h"
#include "targets/placement.h"

namespace ferry::runtime {

struct PrepareOptions {
  // Concrete shapes for inputs (by input name, e.g. from `--shape`): fixed in the graph, so shapes
  // re-infer statically, shape subgraphs fold and the memory planner can place more tensors. They must
  // agree with the declared rank and static dims.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // A dynamic-batch gear: dim 0 of every input fixed to this (0: none). Other dims stay as declared.
  int64_t batch = 0;
  // Graph optimization level (0: none ... 3, passes/pipeline.h). The library default is 0 (the graph
  // runs as imported); the CLI's is 2.
  int opt_level = 0;
  // Precision mode, keep/force lists (passes/precision.h); fp32 (the default) changes nothing.
  passes::PrecisionOptions precision;
  // A target (targets/target.h: built-in name or profile file). Nodes its device cannot run stay fp32
  // on the host; a target without a local device (ascend*) is emulated: its numerics on this CPU.
  // When `precision_given` is false the target's default precision applies (Ascend: fp16, as ATC).
  std::string target;
  bool precision_given = false;  // set when the precision was chosen (a flag), not left at its default
};

// What prepare() did, for reports.
struct PrepareReport {
  std::vector<passes::PassReport> passes;
  passes::PrecisionReport precision;
  std::string target;        // the target's name ("" none)
  bool emulated = false;     // the target has no device here
  // Placement of each node of the graph that was placed (after cleanup, before fusion), by node name,
  // in graph order; empty without a target. Fused nodes' provenance leads back to these names.
  std::vector<std::pair<std::string, targets::NodePlacement>> placement;
  int host_nodes = 0;        // placed on the host or unsupported (they run fp32 on the CPU)
  // The memory plan of the main graph, filled in when a Session plans the prepared model (executor.h):
  // intermediates placed in the arena, the arena's bytes, and what one buffer each would take.
  size_t planned_values = 0, arena_bytes = 0, naive_bytes = 0;
};

// Prepares `model` in place. Errors name the model, the input, the pass or the flag.
Status prepare(ir::Model& model, const PrepareOptions& opts, PrepareReport* report);

// "ascend310p (EMULATED on this CPU: the device's numerics, CPU timings), 2 node(s) on the host in
// fp32"; "" without a target.
std::string target_label(const PrepareReport& r);

// passes::describe with what the backend says of its bf16 compute (native or emulated, and why).
std::string describe_precision(passes::PrecisionMode m, const std::string& backend,
                               const backends::BackendOptions& options = {});

// Checks a fixed input shape against the graph's declaration (rank, static dims, a known input).
Status check_fixed_shape(const ir::Graph& g, const std::string& name, const std::vector<int64_t>& dims);

}  // namespace ferry::runtime
