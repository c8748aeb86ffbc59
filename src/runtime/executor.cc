#include "runtime/executor.h"

#include <new>
#include <set>

namespace ferry::runtime {

const RtValue* Scope::find(const ir::Value* v) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->values.find(v);
    if (it != s->values.end()) return &it->second;
  }
  return nullptr;
}

namespace {

// Values of `owner` that `g` (a subgraph, at any depth) reads.
void collect_outer_refs(const ir::Graph& g, const ir::Graph& owner, std::set<const ir::Value*>& out) {
  for (const auto& n : g.nodes) {
    for (const ir::Value* in : n->inputs)
      if (in && in->graph == &owner) out.insert(in);
    for (const ir::Graph* sg : n->subgraphs()) collect_outer_refs(*sg, owner, out);
  }
  for (const ir::Value* o : g.outputs)
    if (o->graph == &owner) out.insert(o);
}

// Runs subgraphs for a kernel, in the scope of the node that calls them.
class ScopedRunner : public ops::SubgraphRunner {
 public:
  ScopedRunner(Executor& ex, const Scope& scope) : ex_(ex), scope_(scope) {}
  Result<std::vector<RtValue>> run(const ir::Graph& body, std::vector<RtValue> inputs) override {
    if (inputs.size() != body.inputs.size())
      return Status::invalid("subgraph '" + body.name + "' takes " + std::to_string(body.inputs.size()) +
                             " inputs but got " + std::to_string(inputs.size()));
    Scope inner;
    inner.parent = &scope_;
    for (size_t i = 0; i < inputs.size(); ++i) inner.values[body.inputs[i]] = std::move(inputs[i]);
    FERRY_RETURN_IF_ERROR(ex_.run_graph(body, inner, nullptr));
    std::vector<RtValue> outs;
    outs.reserve(body.outputs.size());
    for (const ir::Value* o : body.outputs) {
      const RtValue* v = inner.find(o);
      if (!v && o->is_constant()) {
        outs.emplace_back(o->initializer);
        continue;
      }
      if (!v) return Status::internal("subgraph output '" + o->name + "' was not computed");
      outs.push_back(*v);
      if (v->is_tensor() && !v->tensor.is_plain()) {
        FERRY_ASSIGN_OR_RETURN(outs.back().tensor, v->tensor.plain());
      }
    }
    return outs;
  }

 private:
  Executor& ex_;
  const Scope& scope_;
};

}  // namespace

Executor::Executor(std::unique_ptr<backends::Backend> primary)
    : primary_(std::move(primary)), reference_(backends::make_reference_backend()) {}

Status Executor::prepare(const ir::Graph& g) {
  FERRY_ASSIGN_OR_RETURN(const GraphPlan* plan, plan_for(g));
  (void)plan;
  for (const auto& node : g.nodes)
    for (const ir::Graph* sg : node->subgraphs()) FERRY_RETURN_IF_ERROR(prepare(*sg));
  return Status();
}

Result<const GraphPlan*> Executor::plan_for(const ir::Graph& g) {
  auto it = plans_.find(&g);
  if (it != plans_.end()) return it->second.get();
  auto plan = std::make_unique<GraphPlan>();
  const size_t n = g.nodes.size();
  plan->kernels.resize(n);
  plan->release_after.resize(n);
  std::unordered_map<const ir::Value*, size_t> last_use;
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = *g.nodes[i];
    backends::Backend* b = primary_ && primary_->supports(node) ? primary_.get() : reference_.get();
    auto kernel = b->create_kernel(node);
    if (!kernel.ok()) return kernel.status().with_context("while preparing node '" + node.name + "' (" + node.op_type + ")");
    plan->kernels[i] = std::move(kernel).value();
    std::set<const ir::Value*> used(node.inputs.begin(), node.inputs.end());
    for (const ir::Graph* sg : node.subgraphs()) collect_outer_refs(*sg, g, used);
    for (const ir::Value* v : used)
      if (v && v->graph == &g && !v->is_constant()) last_use[v] = i;
    for (const ir::Value* o : node.outputs)
      if (o && !last_use.count(o)) last_use[o] = i;  // unused outputs die at once
  }
  std::set<const ir::Value*> keep(g.outputs.begin(), g.outputs.end());
  for (const auto& [v, i] : last_use)
    if (!keep.count(v)) plan->release_after[i].push_back(v);
  const GraphPlan* ref = plan.get();
  plans_[&g] = std::move(plan);
  return ref;
}

Status Executor::run_graph(const ir::Graph& g, Scope& scope, const NodeHook* hook) {
  FERRY_ASSIGN_OR_RETURN(const GraphPlan* plan_ptr, plan_for(g));
  const GraphPlan& plan = *plan_ptr;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = *g.nodes[i];
    backends::Kernel& kernel = *plan.kernels[i];
    std::string where = "while running node '" + node.name + "' (" + node.op_type + ")";
    std::vector<const RtValue*> inputs;
    inputs.reserve(node.inputs.size());
    std::vector<RtValue> const_inputs;
    const_inputs.reserve(node.inputs.size());
    for (const ir::Value* in : node.inputs) {
      if (!in) {
        inputs.push_back(nullptr);
        continue;
      }
      const RtValue* v = scope.find(in);
      if (!v && in->is_constant()) {
        const_inputs.emplace_back(in->initializer);
        v = &const_inputs.back();
      }
      if (!v) return Status::internal("input '" + in->name + "' has no value").with_context(where);
      if (v->is_tensor() && !v->tensor.is_plain() && !kernel.accepts_layouts()) {
        auto plain = v->tensor.plain();
        if (!plain.ok()) return plain.status().with_context(where);
        const_inputs.emplace_back(std::move(plain).value());
        v = &const_inputs.back();
      }
      inputs.push_back(v);
    }
    ScopedRunner runner(*this, scope);
    ops::KernelContext ctx(node, inputs, &runner);
    Status st;
    try {
      st = kernel.run(ctx);
    } catch (const std::bad_alloc&) {
      st = Status::error(ErrorCode::kOutOfRange, "out of memory");
    } catch (const std::exception& e) {
      st = Status::internal(std::string("kernel raised: ") + e.what());
    }
    if (!st.ok()) return st.with_context(where);
    auto& outs = ctx.outputs();
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const ir::Value* o = node.outputs[k];
      if (!o) continue;
      if (outs[k].is_none() && o->kind == ir::ValueKind::kTensor)
        return Status::internal("the kernel did not produce output '" + o->name + "'").with_context(where);
    }
    if (hook && *hook) {
      // Hooks (compare, dumps) see plain tensors, whatever layout the kernels keep between them.
      for (auto& o : outs)
        if (o.is_tensor() && !o.tensor.is_plain()) {
          auto plain = o.tensor.plain();
          if (!plain.ok()) return plain.status().with_context(where);
          o.tensor = std::move(plain).value();
        }
      (*hook)(node, inputs, outs);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k]) scope.values[node.outputs[k]] = std::move(outs[k]);
    for (const ir::Value* dead : plan.release_after[i]) scope.values.erase(dead);
  }
  return Status();
}

}  // namespace ferry::runtime
