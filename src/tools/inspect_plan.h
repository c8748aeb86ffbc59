// `ferry inspect --plan`: what a session will actually run. Per main-graph node (after optimization at
// the chosen level): the kernel the backend picked, the ONNX nodes it covers, its output types; then
// the memory plan (each arena buffer with its offset and lifetime), the arena vs the naive sum and the
// peak of live bytes, and the weight bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace ferry::tools {

struct PlanNode {
  int index = 0;
  std::string name, op;       // op: "Conv", "com.ferry.FusedConv"
  std::string kernel;         // Kernel::name(): "reference", "cpu:dnnl_conv(nChw16c)"
  std::vector<std::string> covers;   // provenance: the ONNX nodes this node stands for
  std::vector<std::string> outputs;  // "name: float32[1,64,112,112]"
  int subgraphs = 0;                 // If/Loop/Scan bodies (their values are allocated dynamically)
};

struct PlanBuffer {
  std::string value;
  size_t bytes = 0, offset = 0;
  int first_use = 0, last_use = 0;
  std::string inplace_of;  // the value whose bytes it takes over, or ""
};

struct ModelPlan {
  std::string path, backend;
  int opt_level = 0;
  std::vector<passes::PassReport> passes;
  std::vector<PlanNode> nodes;
  std::map<std::string, int64_t> kernel_counts;
  std::vector<PlanBuffer> buffers;
  size_t arena_bytes = 0;      // the plan's arena
  bool arena_allocated = false;
  size_t naive_bytes = 0;      // one buffer per planned value
  size_t peak_live_bytes = 0;  // max over nodes of the planned values live there (no plan does better)
  int64_t unplanned_values = 0;  // main-graph intermediates left to dynamic allocation
  // The plan as refined by one run on random inputs (values whose kernels build their own tensors
  // dropped), or why there was no such run.
  bool refined = false;
  int dropped_values = 0;
  std::string not_refined_because;
  int64_t weight_bytes = 0, weights = 0;  // initializers, subgraphs included
};

// Loads `path` into a Session with `options` (input_shapes fix dynamic dims so more can be planned),
// runs it once on random inputs when every input shape is known (the first run refines the memory
// plan, see runtime/executor.h), and reports its plan.
Result<ModelPlan> plan_model(const std::string& path, const runtime::SessionOptions& options);
ModelPlan describe_plan(const runtime::Session& session);

std::string format_model_plan(const ModelPlan& p);
nlohmann::json model_plan_to_json(const ModelPlan& p);

}  // namespace ferry::tools
