#include "runtime/memory_budget.h"

#include <vector>

#include "core/byte_size.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace ferry::runtime {

namespace {

// Without /proc or sysconf (never seen on Linux), a budget that refuses only the absurd.
constexpr int64_t kFallbackBudget = int64_t{1} << 40;

// Bytes of a static tensor value as a double: exact enough to quote, and no overflow for shapes whose
// element count does not fit in int64.
double declared_bytes(const ir::Value& v) {
  double n = static_cast<double>(dtype_size(v.dtype));
  for (const Dim& d : *v.shape) n *= static_cast<double>(d.value);
  return n;
}

std::string exact_bytes(double bytes) {
  if (bytes >= 9.2e18) return byte_size_text(bytes);
  return byte_size_text(bytes) + " (" + std::to_string(static_cast<int64_t>(bytes)) + " bytes)";
}

Status too_big(const ir::Value& v, double bytes, int64_t budget, bool budget_is_default) {
  std::string who = "value '" + v.name + "'";
  if (v.producer) who += " (output of " + v.producer->label() + ")";
  else if (v.is_constant()) who += " (a constant)";
  else if (v.is_graph_input) who += " (a graph input)";
  return Status::error(ErrorCode::kOutOfRange, who + " is declared " + v.type_string() + ": it would need " +
                                                   exact_bytes(bytes) + ", more than " +
                                                   budget_text(budget, budget_is_default));
}

}  // namespace

int64_t memory_budget(int64_t max_memory) {
  if (max_memory > 0) return max_memory;
  const int64_t physical = physical_memory_bytes();
  return physical > 0 ? physical : kFallbackBudget;
}

std::string budget_text(int64_t budget, bool is_default) {
  return "the memory budget of " + byte_size_text(static_cast<double>(budget)) +
         (is_default ? " (the machine's memory; --max-memory sets another)" : " (--max-memory)");
}

Status check_declared_memory(const ir::Graph& root, int64_t budget) {
  const bool is_default = budget == memory_budget(0);
  double constants = 0;
  std::vector<const ir::Graph*> todo{&root};
  while (!todo.empty()) {
    const ir::Graph* g = todo.back();
    todo.pop_back();
    for (const auto& v : g->values) {
      if (v->kind != ir::ValueKind::kTensor || v->dtype == DType::kUndefined || !v->shape || !is_static(*v->shape))
        continue;
      const double bytes = declared_bytes(*v);
      if (bytes > static_cast<double>(budget)) return too_big(*v, bytes, budget, is_default);
      if (v->is_constant()) constants += static_cast<double>(v->initializer.nbytes());
    }
    for (const auto& n : g->nodes)
      for (const ir::Graph* sg : n->subgraphs()) todo.push_back(sg);
  }
  if (constants > static_cast<double>(budget))
    return Status::error(ErrorCode::kOutOfRange, "the model's constants take " + exact_bytes(constants) +
                                                     ", more than " + budget_text(budget, is_default));
  return Status();
}

Status check_planned_memory(int64_t arena_bytes, int64_t weight_bytes, int64_t budget) {
  const double need = static_cast<double>(arena_bytes) + static_cast<double>(weight_bytes);
  if (need <= static_cast<double>(budget)) return Status();
  return Status::error(ErrorCode::kOutOfRange,
                       "the memory plan needs " + exact_bytes(need) + " (intermediates " +
                           byte_size_text(static_cast<double>(arena_bytes)) + ", weights " +
                           byte_size_text(static_cast<double>(weight_bytes)) + "), more than " +
                           budget_text(budget, budget == memory_budget(0)));
}

}  // namespace ferry::runtime
