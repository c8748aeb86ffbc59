// The executor: runs a graph node by node on prepared kernels, in nested scopes so subgraphs
// (If/Loop/Scan bodies) see their outer-scope values, freeing each intermediate after its last use.
//
// Memory: the main graph's plain intermediates whose size is static after inference live in one
// 64-byte aligned arena, placed by the memory planner (memory_planner.h) at prepare time and reused by
// every run; kernels get their slot through KernelContext::set_output_slot. Subgraph values, graph
// outputs and dynamic-size values keep their own allocations. A tensor in the arena never outlives its
// planned lifetime: a value produced by an aliasing op (Reshape, Identity, Squeeze, Unsqueeze, Flatten)
// extends the lifetime of the buffer it views, and any other output found pointing into the arena
// outside the range planned for it (a graph output, a sequence element, an If/Loop result that
// forwards an outer value, an op that returned its input) is copied out right after its node ran.
// The plan assumes every kernel fills its output slot; kernels that build their own tensors (several
// reference kernels do) leave it unused, so the first run notes which slots were used and the plan is
// then redone without the others, shrinking the arena to memory kernels really use.
// One run at a time per Executor (Session::run serializes).
#pragma once
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "backends/backend.h"
#include "ops/op.h"
#include "runtime/memory_planner.h"
#include "runtime/session.h"

namespace ferry::runtime {

// Hands freed heap memory back to the system (malloc_trim), which the session's keep-freed malloc
// policy otherwise holds; nothing with FERRY_KEEP_MALLOC_DEFAULTS set or outside glibc.
void release_freed_memory();

// Values visible while a graph runs: its own, then the enclosing scopes'.
struct Scope {
  std::unordered_map<const ir::Value*, RtValue> values;
  const Scope* parent = nullptr;
  const RtValue* find(const ir::Value* v) const;
};

// A byte range of the arena; bytes == 0: none.
struct ArenaRange {
  size_t offset = 0;
  size_t bytes = 0;
  int request = -1;  // the GraphMemory request it belongs to
};

// The main graph's memory plan: which values live in the arena, where, and from when to when.
struct GraphMemory {
  std::vector<BufferRequest> requests;    // one per arena-placed value, in node order
  std::vector<const ir::Value*> values;   // the value of each request
  MemoryPlan plan;
  std::vector<std::vector<ArenaRange>> slots;    // [node][output]: planned memory, if any
  std::vector<std::vector<ArenaRange>> allowed;  // [node][output]: the arena range it may point into
};

// Per-graph facts computed once: each node's prepared kernel and which values die after which node.
struct GraphPlan {
  std::vector<std::unique_ptr<backends::Kernel>> kernels;
  std::vector<std::vector<const ir::Value*>> release_after;  // values of this graph to free after node i
  std::unique_ptr<GraphMemory> memory;  // main graph only
};

class Executor {
 public:
  // `primary` gets every node it supports; the rest run on the reference backend.
  // `use_arena` false: the memory plan is still made (and shown) but no arena is allocated.
  // `memory_budget` > 0: the arena plus the main graph's weights must fit in it, or prepare fails
  // before the arena is allocated (runtime/memory_budget.h).
  explicit Executor(std::unique_ptr<backends::Backend> primary, bool use_arena = true, int64_t memory_budget = 0);
  // The backend that gets every node it supports.
  const backends::Backend& backend() const { return *primary_; }
  // Prepares the plans of the main graph `g` and all its subgraphs now, so bad nodes are reported at
  // load time, then plans the main graph's memory and allocates the arena. Constants of `g` that one
  // kernel prepacked are replaced by that packed copy (Kernel::adopt_constant): afterwards such
  // initializers are non-plain; read them through Tensor::plain().
  Status prepare(const ir::Graph& g);
  // Runs `g` with `scope` holding its inputs; graph outputs are left in `scope`. `hook` is called after
  // each node of `g` (not of its subgraphs); while a kKeep hook is given the arena is not used, since
  // such a hook may keep the tensors it sees (session.h, HookMode).
  Status run_graph(const ir::Graph& g, Scope& scope, const NodeHook* hook, HookMode mode = HookMode::kKeep);
  Result<const GraphPlan*> plan_for(const ir::Graph& g);

  // The main graph's plan (kernels, memory), null before prepare.
  const GraphPlan* main_plan() const { return main_plan_; }
  // Bytes of the arena actually allocated (0 when there is none, e.g. nothing static to place or the
  // plan exceeded the per-tensor size limit).
  size_t arena_bytes() const { return arena_ ? arena_size_ : 0; }
  // Whether a run has refined the plan to the slots kernels use, and how many values it dropped.
  bool plan_refined() const { return refined_; }
  int dropped_values() const { return static_cast<int>(excluded_.size()); }

 private:
  Status prepare_graph(const ir::Graph& g);
  Status plan_memory_for(const ir::Graph& g, GraphPlan& plan);
  Status refine_plan();

  std::unique_ptr<backends::Backend> primary_;  // backend() below
  std::unique_ptr<backends::Backend> reference_;
  std::map<const ir::Graph*, std::unique_ptr<GraphPlan>> plans_;
  const ir::Graph* main_graph_ = nullptr;
  const GraphPlan* main_plan_ = nullptr;
  bool use_arena_ = true;
  int64_t memory_budget_ = 0;
  std::shared_ptr<void> arena_;
  size_t arena_size_ = 0;
  bool refined_ = false;
  std::vector<char> slot_used_;              // per request, during the first arena run
  std::set<const ir::Value*> excluded_;      // values whose kernels did not use their slot
};

}  // namespace ferry::runtime
