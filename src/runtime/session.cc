#include "runtime/session.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>
#include <mutex>

#include "core/shape.h"
#include "frontend/onnx/import.h"
#include "runtime/executor.h"
#include "runtime/memory_budget.h"

namespace ferry::runtime {

namespace {

// Tensors that do not live in the arena (blocked-layout activations, dynamic shapes, outputs) are
// allocated and freed every run. glibc serves big blocks with fresh mmap'd pages and gives freed heap
// tops back to the system, so every run page-faults its big tensors in again: on mobilenet_v2 at batch 8
// that was 40% of the run (92 -> 51 ms with freed memory kept). So freed memory stays in the process,
// once per process, unless FERRY_KEEP_MALLOC_DEFAULTS is set (for embedding applications that tune
// malloc themselves).
void keep_freed_memory_once() {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("FERRY_KEEP_MALLOC_DEFAULTS")) return;
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
#endif
}

// Loading frees far more than a run allocates (the parsed protobuf, unpacked weights, the optimizer's
// copies): with trimming off (above) that memory would stay resident for the session's life — vit_b_16
// at batch 8 held ~330 MB of it. Handing it back once after load keeps the run-time policy intact.
void release_load_memory() { release_freed_memory(); }

std::string kind_name(const RtValue& v) {
  if (v.is_sequence()) return "a sequence";
  if (v.is_none()) return "an empty optional";
  return "a tensor";
}

// Checks one fed input against the graph's declaration; binds symbolic dims to sizes consistently.
Status check_input(const ir::Value& decl, const RtValue& v, std::map<std::string, int64_t>& symbols) {
  const std::string label = "input '" + decl.name + "'";
  if (decl.kind == ir::ValueKind::kTensor && !v.is_tensor())
    return Status::invalid(label + " must be a tensor but got " + kind_name(v));
  if (decl.kind == ir::ValueKind::kSequence && !v.is_sequence())
    return Status::invalid(label + " must be a sequence but got " + kind_name(v));
  if (!v.is_tensor()) return Status();
  const Tensor& t = v.tensor;
  if (decl.dtype != DType::kUndefined && t.dtype() != decl.dtype)
    return Status::invalid(label + " has dtype " + std::string(dtype_name(t.dtype())) + " but the model expects " +
                           std::string(dtype_name(decl.dtype)));
  if (!decl.shape) return Status();
  const Shape& s = *decl.shape;
  if (static_cast<int>(s.size()) != t.rank())
    return Status::invalid(label + " has shape " + dims_to_string(t.dims()) + " (rank " + std::to_string(t.rank()) +
                           ") but the model expects " + shape_to_string(s) + " (rank " + std::to_string(s.size()) + ")");
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].is_static() && s[i].value != t.dims()[i])
      return Status::invalid(label + " has shape " + dims_to_string(t.dims()) + " but the model expects " +
                             shape_to_string(s) + " (dimension " + std::to_string(i) + " differs)");
    if (!s[i].is_static() && !s[i].symbol.empty()) {
      auto [it, fresh] = symbols.emplace(s[i].symbol, t.dims()[i]);
      if (!fresh && it->second != t.dims()[i])
        return Status::invalid(label + " gives dimension '" + s[i].symbol + "' the size " +
                               std::to_string(t.dims()[i]) + " but another input gave it " +
                               std::to_string(it->second));
    }
  }
  return Status();
}

}  // namespace

Result<std::unique_ptr<Session>> Session::load(const std::string& path, const SessionOptions& opts) {
  frontend::ImportOptions imp;
  imp.allow_newer_opset = opts.allow_newer_opset;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, frontend::load_onnx(path, imp));
  return from_model(std::move(model), opts);
}

Result<std::unique_ptr<Session>> Session::from_model(std::unique_ptr<ir::Model> model, const SessionOptions& opts) {
  // Before the passes: constant folding would otherwise try to make what the budget refuses.
  if (Status st = check_declared_memory(*model->graph, memory_budget(opts.max_memory)); !st.ok())
    return st.with_context(model->source_path);
  PrepareReport report;
  FERRY_RETURN_IF_ERROR(prepare(*model, opts, &report));
  return from_prepared(std::move(model), opts, std::move(report));
}

Result<std::unique_ptr<Session>> Session::from_prepared(std::unique_ptr<ir::Model> model, const SessionOptions& opts,
                                                        PrepareReport report) {
  if (opts.backend_options.threads < 0)
    return Status::invalid("thread count " + std::to_string(opts.backend_options.threads) + " is negative");
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<backends::Backend> backend,
                         backends::make_backend(opts.backend, opts.backend_options));
  const int64_t budget = memory_budget(opts.max_memory);
  if (Status st = check_declared_memory(*model->graph, budget); !st.ok()) return st.with_context(model->source_path);
  keep_freed_memory_once();
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  s->opts_ = opts;
  s->prepared_ = std::move(report);
  s->executor_ = std::make_unique<Executor>(std::move(backend), opts.memory_arena, budget);
  Status st = s->executor_->prepare(*s->model_->graph);
  if (!st.ok()) return st.with_context(s->model_->source_path);
  if (const GraphPlan* plan = s->executor_->main_plan(); plan && plan->memory) {
    s->prepared_.planned_values = plan->memory->values.size();
    s->prepared_.arena_bytes = plan->memory->plan.arena_bytes;
    s->prepared_.naive_bytes = plan->memory->plan.naive_bytes;
  }
  release_load_memory();
  return s;
}

std::string Session::precision_description() const {
  std::string why;
  const bool native = executor_->backend().native_bf16(&why);
  return passes::describe(prepared_.precision.mode, executor_->backend().name(), native, why);
}

std::vector<std::string> Session::kernel_choices() const { return executor_->backend().kernel_choices(); }

Session::~Session() = default;

std::vector<InputInfo> Session::inputs() const {
  std::vector<InputInfo> out;
  for (const ir::Value* v : graph().inputs)
    if (!v->is_constant()) out.push_back({v->name, v->dtype, v->shape});
  return out;
}

std::vector<InputInfo> Session::outputs() const {
  std::vector<InputInfo> out;
  for (const ir::Value* v : graph().outputs) out.push_back({v->name, v->dtype, v->shape});
  return out;
}

Result<std::vector<std::pair<std::string, RtValue>>> Session::run(const std::map<std::string, RtValue>& feeds) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  const ir::Graph& g = graph();
  Scope scope;
  scope.values.reserve(g.values.size());  // no rehashing while the run fills it
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, value] : feeds) {
    const ir::Value* decl = g.find_local_value(name);
    bool is_input = decl && decl->is_graph_input;
    if (!is_input) {
      std::string names;
      for (const auto& in : inputs()) names += (names.empty() ? "" : ", ") + in.name;
      return Status::invalid("unknown input '" + name + "'; the model's inputs are: " + (names.empty() ? "(none)" : names));
    }
    FERRY_RETURN_IF_ERROR(check_input(*decl, value, symbols));
    scope.values[decl] = value;
  }
  for (const ir::Value* in : g.inputs) {
    if (scope.values.count(in) || in->is_constant()) continue;
    return Status::invalid("missing input '" + in->name + "' (" + in->type_string() + ")");
  }
  // Tensors the run allocates (dynamic shapes) stay within the budget too.
  const ScopedTensorBudget budget(opts_.max_memory);
  FERRY_RETURN_IF_ERROR(executor_->run_graph(g, scope, hook_ ? &hook_ : nullptr, hook_mode_));
  std::vector<std::pair<std::string, RtValue>> out;
  for (const ir::Value* o : g.outputs) {
    const RtValue* v = scope.find(o);
    if (!v && o->is_constant()) {
      out.emplace_back(o->name, RtValue(o->initializer));
      continue;
    }
    if (!v) return Status::internal("output '" + o->name + "' was not computed");
    out.emplace_back(o->name, *v);
    if (v->is_tensor() && !v->tensor.is_plain()) {
      FERRY_ASSIGN_OR_RETURN(out.back().second.tensor, v->tensor.plain());
    }
  }
  return out;
}

Result<std::vector<std::pair<std::string, Tensor>>> Session::run_tensors(const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, RtValue> values;
  for (const auto& [k, t] : feeds) values.emplace(k, RtValue(t));
  FERRY_ASSIGN_OR_RETURN(auto outs, run(values));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, v] : outs) {
    if (!v.is_tensor()) return Status::unsupported("output '" + name + "' is not a tensor");
    tensors.emplace_back(name, std::move(v.tensor));
  }
  return tensors;
}

}  // namespace ferry::runtime
