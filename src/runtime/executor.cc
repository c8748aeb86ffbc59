#include "runtime/executor.h"

#include "passes/pass_util.h"

#include <malloc.h>

#include <cstdlib>
#include <new>
#include <set>
#include <utility>

#include "core/file_mapping.h"
#include "core/shape.h"
#include "runtime/memory_budget.h"

namespace ferry::runtime {

void release_freed_memory() {
#ifdef __GLIBC__
  if (!std::getenv("FERRY_KEEP_MALLOC_DEFAULTS")) malloc_trim(0);
#endif
}

const RtValue* Scope::find(const ir::Value* v) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->values.find(v);
    if (it != s->values.end()) return &it->second;
  }
  return nullptr;
}

namespace {

// A freed weight at least this big is handed back right after its adoption (see prepare).
constexpr size_t kReleaseAfterAdoptBytes = size_t{4} << 20;

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

// Index of the last node of `g` that reads each non-constant value of `g` (through subgraphs too);
// an output nobody reads dies at its producer.
std::unordered_map<const ir::Value*, int> last_uses(const ir::Graph& g) {
  std::unordered_map<const ir::Value*, int> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = *g.nodes[i];
    std::set<const ir::Value*> used(node.inputs.begin(), node.inputs.end());
    for (const ir::Graph* sg : node.subgraphs()) collect_outer_refs(*sg, g, used);
    for (const ir::Value* v : used)
      if (v && v->graph == &g && !v->is_constant()) last_use[v] = static_cast<int>(i);
    for (const ir::Value* o : node.outputs)
      if (o && !last_use.count(o)) last_use[o] = static_cast<int>(i);
  }
  return last_use;
}

// Ops whose kernels may return a view of input 0's buffer (same bytes, other dims).
bool is_aliasing_op(const ir::Node& n) {
  if (!n.domain.empty()) return false;
  const std::string& t = n.op_type;
  return t == "Identity" || t == "Reshape" || t == "Squeeze" || t == "Unsqueeze" || t == "Flatten";
}

// An aliasing op, or a kernel that says its output 0 may view input 0 (Kernel::may_view_input).
bool views_input(const ir::Node& n, const backends::Kernel& k) { return is_aliasing_op(n) || k.may_view_input(0); }

// Bytes of a value whose dtype and shape are static, or 0 when not (or absurd).
size_t static_bytes(const ir::Value& v) {
  if (v.kind != ir::ValueKind::kTensor || v.dtype == DType::kUndefined || !v.shape || !is_static(*v.shape)) return 0;
  auto n = checked_numel(static_dims(*v.shape));
  if (!n.ok() || *n == 0) return 0;
  if (*n > max_tensor_bytes() / static_cast<int64_t>(dtype_size(v.dtype))) return 0;
  return static_cast<size_t>(*n) * dtype_size(v.dtype);
}

bool inside(const void* p, size_t bytes, const char* base, ArenaRange r) {
  const char* c = static_cast<const char*>(p);
  return r.bytes && c >= base + r.offset && c + bytes <= base + r.offset + r.bytes;
}

// Replaces `t` (a view of arena memory) by a copy in its own memory; a non-plain layout becomes plain.
Status copy_out(Tensor& t) {
  if (t.is_plain()) {
    t = t.clone();
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(t, t.plain());
  return Status();
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

Executor::Executor(std::unique_ptr<backends::Backend> primary, bool use_arena, int64_t memory_budget)
    : primary_(std::move(primary)),
      reference_(backends::make_reference_backend()),
      use_arena_(use_arena),
      memory_budget_(memory_budget) {}

Status Executor::prepare(const ir::Graph& g) {
  FERRY_RETURN_IF_ERROR(prepare_graph(g));
  main_graph_ = &g;
  GraphPlan& plan = *plans_.at(&g);
  FERRY_RETURN_IF_ERROR(plan_memory_for(g, plan));
  main_plan_ = &plan;
  return Status();
}

Status Executor::prepare_graph(const ir::Graph& g) {
  FERRY_ASSIGN_OR_RETURN(const GraphPlan* plan, plan_for(g));
  (void)plan;
  for (const auto& node : g.nodes)
    for (const ir::Graph* sg : node->subgraphs()) FERRY_RETURN_IF_ERROR(prepare_graph(*sg));
  return Status();
}

Result<const GraphPlan*> Executor::plan_for(const ir::Graph& g) {
  auto it = plans_.find(&g);
  if (it != plans_.end()) return it->second.get();
  auto plan = std::make_unique<GraphPlan>();
  const size_t n = g.nodes.size();
  plan->kernels.resize(n);
  plan->release_after.resize(n);
  const passes::Uses uses(g);
  const passes::PreparingUses preparing(g, uses);
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = *g.nodes[i];
    backends::Backend* b = primary_ && primary_->supports(node) ? primary_.get() : reference_.get();
    auto kernel = b->create_kernel(node);
    if (!kernel.ok()) return kernel.status().with_context("while preparing node '" + node.name + "' (" + node.op_type + ")");
    plan->kernels[i] = std::move(kernel).value();
    // A weight that this kernel alone reads and has prepacked is held once: the kernel's packed copy
    // replaces the initializer (Kernel::adopt_constant), right away, so the load never holds all the
    // weights twice. The graph belongs to the session that owns this executor and hands it over for
    // running; initializers are the one thing preparing may change in it.
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ir::Value* v = node.inputs[k];
      if (!v || !v->is_constant() || v->graph != &g || !v->initializer.is_plain() || !uses.single_use(v)) continue;
      Tensor adopted = plan->kernels[i]->adopt_constant(static_cast<int>(k));
      if (!adopted.defined()) continue;
      Tensor original = std::exchange(const_cast<ir::Value*>(v)->initializer, std::move(adopted));
      const size_t freed = original.nbytes();
      // From a mapped .ferry file: the pages the kernel read to pack it leave the resident set.
      release_file_pages(original.raw(), freed);
      original = Tensor();  // a heap weight's last reference: freed before the trim below
      // A pack in memory of its own (MKL's is mmap'd) cannot reuse the plain weight's freed heap block,
      // which the keep-freed policy would hold until the end of the load: bert_like peaked 100 MB higher.
      if (freed >= kReleaseAfterAdoptBytes) release_freed_memory();
    }
  }
  std::set<const ir::Value*> keep(g.outputs.begin(), g.outputs.end());
  for (const auto& [v, i] : last_uses(g))
    if (!keep.count(v)) plan->release_after[i].push_back(v);
  const GraphPlan* ref = plan.get();
  plans_[&g] = std::move(plan);
  return ref;
}

Status Executor::plan_memory_for(const ir::Graph& g, GraphPlan& plan) {
  auto mem = std::make_unique<GraphMemory>();
  const int n = static_cast<int>(g.nodes.size());
  std::unordered_map<const ir::Value*, int> last = last_uses(g);
  std::set<const ir::Value*> outputs(g.outputs.begin(), g.outputs.end());

  // Aliasing ops view their input's buffer: that buffer (the root of a chain of views) must stay
  // until the last view's last use.
  std::unordered_map<const ir::Value*, const ir::Value*> root_of;
  for (int i = 0; i < n; ++i) {
    const ir::Node& node = *g.nodes[i];
    if (!views_input(node, *plan.kernels[i]) || !node.has_input(0) || !node.has_output(0)) continue;
    const ir::Value* src = node.inputs[0];
    auto r = root_of.find(src);
    const ir::Value* root = r != root_of.end() ? r->second : src;
    root_of[node.outputs[0]] = root;
    if (last.count(root)) last[root] = std::max(last[root], last[node.outputs[0]]);
  }

  std::unordered_map<const ir::Value*, int> request_of;
  mem->slots.resize(n);
  mem->allowed.resize(n);
  for (int i = 0; i < n; ++i) {
    const ir::Node& node = *g.nodes[i];
    mem->slots[i].resize(node.outputs.size());
    mem->allowed[i].resize(node.outputs.size());
    // Nodes with subgraphs hand back what their bodies computed; views are planned through their root.
    if (!node.subgraphs().empty() || views_input(node, *plan.kernels[i])) continue;
    const backends::Kernel& kernel = *plan.kernels[i];
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const ir::Value* o = node.outputs[k];
      if (!o || outputs.count(o) || excluded_.count(o)) continue;
      size_t bytes = static_bytes(*o);
      if (bytes == 0) continue;
      BufferRequest r;
      r.name = o->name;
      r.bytes = bytes;
      r.first_use = i;
      r.last_use = last.count(o) ? last[o] : i;
      int in = kernel.inplace_input(static_cast<int>(k));
      if (in >= 0 && node.has_input(in)) {
        auto c = request_of.find(node.inputs[in]);
        if (c != request_of.end() && node.inputs[in]->dtype == o->dtype) r.inplace_candidate = c->second;
      }
      request_of[o] = static_cast<int>(mem->requests.size());
      mem->requests.push_back(std::move(r));
      mem->values.push_back(o);
    }
  }
  FERRY_ASSIGN_OR_RETURN(mem->plan, plan_memory(mem->requests, 64));
  for (int i = 0; i < n; ++i) {
    const ir::Node& node = *g.nodes[i];
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const ir::Value* o = node.outputs[k];
      if (!o) continue;
      if (auto r = request_of.find(o); r != request_of.end()) {
        ArenaRange range{mem->plan.offsets[r->second], mem->requests[r->second].bytes, r->second};
        mem->slots[i][k] = range;
        mem->allowed[i][k] = range;
      } else if (auto a = root_of.find(o); a != root_of.end() && !outputs.count(o)) {
        if (auto rr = request_of.find(a->second); rr != request_of.end())
          mem->allowed[i][k] = ArenaRange{mem->plan.offsets[rr->second], mem->requests[rr->second].bytes, rr->second};
      }
    }
  }
  // One allocation for all runs. Past the per-tensor limit, or when memory is short, the session
  // runs without an arena (every tensor allocated as it is produced), which is slower but correct.
  arena_.reset();
  arena_size_ = mem->plan.arena_bytes;
  if (memory_budget_ > 0) {
    int64_t weights = 0;
    for (const ir::Value* v : g.initializers()) weights += static_cast<int64_t>(v->initializer.nbytes());
    FERRY_RETURN_IF_ERROR(check_planned_memory(static_cast<int64_t>(arena_size_), weights, memory_budget_));
  }
  if (use_arena_ && arena_size_ > 0 && arena_size_ <= static_cast<size_t>(max_tensor_bytes())) {
    void* p = std::aligned_alloc(64, (arena_size_ + 63) / 64 * 64);
    if (p) arena_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  slot_used_.assign(mem->requests.size(), 0);
  plan.memory = std::move(mem);
  return Status();
}

Status Executor::refine_plan() {
  refined_ = true;
  GraphPlan& plan = *plans_.at(main_graph_);
  bool changed = false;
  for (size_t r = 0; r < slot_used_.size(); ++r)
    if (!slot_used_[r]) {
      excluded_.insert(plan.memory->values[r]);
      changed = true;
    }
  if (!changed) return Status();
  // Nothing of the finished run points into the arena any more (graph outputs were copied out), so
  // it can be replaced; a tensor that still holds the old one keeps it alive through keep_alive.
  return plan_memory_for(*main_graph_, plan);
}

Status Executor::run_graph(const ir::Graph& g, Scope& scope, const NodeHook* hook, HookMode mode) {
  FERRY_ASSIGN_OR_RETURN(const GraphPlan* plan_ptr, plan_for(g));
  const GraphPlan& plan = *plan_ptr;
  const bool has_hook = hook && *hook;
  const bool keeping_hook = has_hook && mode == HookMode::kKeep;
  // The arena serves the main graph only, and not while a hook may keep tensors.
  const GraphMemory* mem = (&g == main_graph_ && arena_ && !keeping_hook) ? plan.memory.get() : nullptr;
  char* const base = mem ? static_cast<char*>(arena_.get()) : nullptr;
  const size_t n = g.nodes.size();
  std::vector<const RtValue*> inputs;
  std::vector<RtValue> const_inputs;
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = *g.nodes[i];
    backends::Kernel& kernel = *plan.kernels[i];
    // Built only on error: formatting it for every node of every run costs more than small kernels.
    auto where = [&node] { return "while running node '" + node.name + "' (" + node.op_type + ")"; };
    inputs.clear();
    inputs.reserve(node.inputs.size());
    const_inputs.clear();
    const_inputs.reserve(node.inputs.size());  // no reallocation below: `inputs` points into it
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
      if (!v) return Status::internal("input '" + in->name + "' has no value").with_context(where());
      if (v->is_tensor() && !v->tensor.is_plain() && !kernel.accepts_layouts()) {
        auto plain = v->tensor.plain();
        if (!plain.ok()) return plain.status().with_context(where());
        const_inputs.emplace_back(std::move(plain).value());
        v = &const_inputs.back();
      }
      inputs.push_back(v);
    }
    ScopedRunner runner(*this, scope);
    ops::KernelContext ctx(node, inputs, &runner);
    if (mem) {
      const auto& slots = mem->slots[i];
      for (size_t k = 0; k < slots.size(); ++k)
        if (slots[k].bytes) ctx.set_output_slot(static_cast<int>(k), base + slots[k].offset, slots[k].bytes, arena_);
    }
    Status st;
    try {
      st = kernel.run(ctx);
    } catch (const std::bad_alloc&) {
      st = Status::error(ErrorCode::kOutOfRange, "out of memory");
    } catch (const std::exception& e) {
      st = Status::internal(std::string("kernel raised: ") + e.what());
    }
    if (!st.ok()) return st.with_context(where());
    auto& outs = ctx.outputs();
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const ir::Value* o = node.outputs[k];
      if (!o) continue;
      if (outs[k].is_none() && o->kind == ir::ValueKind::kTensor)
        return Status::internal("the kernel did not produce output '" + o->name + "'").with_context(where());
    }
    if (mem && !refined_) {
      const auto& slots = mem->slots[i];
      for (size_t k = 0; k < slots.size() && k < outs.size(); ++k)
        if (slots[k].bytes && outs[k].is_tensor() && outs[k].tensor.raw() == base + slots[k].offset)
          slot_used_[slots[k].request] = 1;
    }
    if (mem) {
      // Arena memory must not escape its planned range: copy out whatever points into the arena
      // outside the range planned for that output (see executor.h).
      const char* end = base + arena_size_;
      auto in_arena = [&](const Tensor& t) {
        const char* p = static_cast<const char*>(t.raw());
        return p && p >= base && p < end;
      };
      for (size_t k = 0; k < outs.size() && k < node.outputs.size(); ++k) {
        RtValue& v = outs[k];
        if (v.is_tensor() && in_arena(v.tensor) && !inside(v.tensor.raw(), v.tensor.nbytes(), base, mem->allowed[i][k]))
          FERRY_RETURN_IF_ERROR(copy_out(v.tensor).with_context(where()));
        for (Tensor& t : v.sequence)
          if (in_arena(t)) FERRY_RETURN_IF_ERROR(copy_out(t).with_context(where()));
      }
    }
    if (has_hook) {
      // Keeping hooks (compare, dumps) see plain tensors, whatever layout the kernels keep between them.
      for (auto& o : outs)
        if (keeping_hook && o.is_tensor() && !o.tensor.is_plain()) {
          auto plain = o.tensor.plain();
          if (!plain.ok()) return plain.status().with_context(where());
          o.tensor = std::move(plain).value();
        }
      (*hook)(node, inputs, outs);
    }
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k]) scope.values[node.outputs[k]] = std::move(outs[k]);
    for (const ir::Value* dead : plan.release_after[i]) scope.values.erase(dead);
  }
  if (mem && !refined_) FERRY_RETURN_IF_ERROR(refine_plan());
  return Status();
}

}  // namespace ferry::runtime
