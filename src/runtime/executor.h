// The executor: runs a graph node by node on the reference kernels, in nested scopes so subgraphs
// (If/Loop/Scan bodies) see their outer-scope values, freeing each intermediate after its last use.
#pragma once
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "backends/backend.h"
#include "ops/op.h"
#include "runtime/session.h"

namespace ferry::runtime {

// Values visible while a graph runs: its own, then the enclosing scopes'.
struct Scope {
  std::unordered_map<const ir::Value*, RtValue> values;
  const Scope* parent = nullptr;
  const RtValue* find(const ir::Value* v) const;
};

// Per-graph facts computed once: each node's prepared kernel and which values die after which node.
struct GraphPlan {
  std::vector<std::unique_ptr<backends::Kernel>> kernels;
  std::vector<std::vector<const ir::Value*>> release_after;  // values of this graph to free after node i
};

class Executor {
 public:
  // `primary` gets every node it supports; the rest run on the reference backend.
  explicit Executor(std::unique_ptr<backends::Backend> primary);
  // Prepares the plans of `g` and all its subgraphs now, so bad nodes are reported at load time.
  Status prepare(const ir::Graph& g);
  // Runs `g` with `scope` holding its inputs; graph outputs are left in `scope`. `hook` is called after
  // each node of `g` (not of its subgraphs).
  Status run_graph(const ir::Graph& g, Scope& scope, const NodeHook* hook);
  Result<const GraphPlan*> plan_for(const ir::Graph& g);

 private:
  std::unique_ptr<backends::Backend> primary_;
  std::unique_ptr<backends::Backend> reference_;
  std::map<const ir::Graph*, std::unique_ptr<GraphPlan>> plans_;
};

}  // namespace ferry::runtime
