// The memory budget (SessionOptions::max_memory, `--max-memory`): a model whose declared shapes or whose
// memory plan need more than the budget is refused before its arena or any intermediate is allocated,
// with the figure it would need; at run time a tensor past the budget fails its allocation with the same
// kind of message (dynamic shapes). The default budget is the machine's physical memory.
#pragma once
#include <cstdint>
#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::runtime {

// The budget in bytes for a SessionOptions::max_memory value (0: the default).
int64_t memory_budget(int64_t max_memory);

// Every value of g and its subgraphs whose dtype and shape are static: none may need more bytes than
// `budget`, and the constants together may not either. The error names the value, the node that makes
// it, its type and the bytes it would take. An iterative walk: a deeply nested graph cannot overflow the
// stack here.
Status check_declared_memory(const ir::Graph& g, int64_t budget);

// The planned arena plus the weights against the budget.
Status check_planned_memory(int64_t arena_bytes, int64_t weight_bytes, int64_t budget);

// "the memory budget of 24.0 GiB (the machine's memory; --max-memory sets another)"
std::string budget_text(int64_t budget, bool is_default);

}  // namespace ferry::runtime
