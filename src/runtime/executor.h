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
#include "ops/op.h"
#include "runtime/session.h"

namespace ferry::runtime {

// Values visible while a graph runs: its own, then the enclosing scopes'.
struct Scope {
  std::unordered_map<const ir::Value*, RtValue> values;
  const Scope* parent = nullptr;
  const RtValue* find(const ir::Value* v) const;
};

// Per-graph facts computed once: each node's schema and which values die after which node.
struct GraphPlan {
  std::vector<const ops::OpSchema*> schemas;
  std::vector<std::vector<const ir::Value*>> release_after;  // values of this graph to free after node i
};

class Executor {
 public:
  // Runs `g` with `scope` holding its inputs; graph outputs are left in `scope`. `hook` is called after
  // each node of `g` (not of its subgraphs).
  Status run_graph(const ir::Graph& g, Scope& scope, const NodeHook* hook);
  const GraphPlan& plan_for(const ir::Graph& g);

 private:
  std::map<const ir::Graph*, std::unique_ptr<GraphPlan>> plans_;
};

}  // namespace ferry::runtime
