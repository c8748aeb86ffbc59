// The memory planner: a pure function from buffer requests (size and lifetime in node order, optional
// in-place hints) to offsets in one arena. The executor places the static-size intermediates of the
// main graph with it; `ferry inspect --plan` prints the result.
//
// Algorithm: "greedy by size" (as in TFLite's and ONNX Runtime's offset planners). In-place pairs are
// first merged into one buffer; then buffers are placed largest first, each into the smallest gap
// between already placed buffers whose lifetimes overlap its own (or after the last of them).
// Two buffers whose lifetimes overlap never share bytes, except an in-place pair, whose sharing is the
// point: the consumer node writes its output over an input that dies at that node.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::runtime {

struct BufferRequest {
  std::string name;     // for the printed plan (the value's name)
  size_t bytes = 0;     // rounded up to the alignment by the planner
  int first_use = 0;    // index of the node that produces it
  int last_use = 0;     // index of the last node that reads it (>= first_use)
  // Index of another request this one may overwrite in place: honoured when that one's last use is
  // this one's first use (the node that produces this one reads that one for the last time, and
  // another node produced that one), its
  // (aligned) size is at least this one's, and no other request claimed it already.
  int inplace_candidate = -1;
};

struct MemoryPlan {
  size_t alignment = 64;
  std::vector<size_t> offsets;  // per request, multiples of `alignment`
  std::vector<int> inplace_of;  // per request: the request whose bytes it took over in place, or -1
  size_t arena_bytes = 0;       // the arena's size: max over requests of offset + aligned bytes
  size_t naive_bytes = 0;       // what one buffer per request would take (sum of aligned sizes)
};

// Plans `requests`. Errors (never a crash): a lifetime that ends before it starts, an in-place index
// out of range, an alignment that is not a power of two, or sizes whose sum overflows size_t.
Result<MemoryPlan> plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 64);

// The plan as a table: one line per request (name, bytes, offset, lifetime, in-place note), in request
// order, then arena size vs the naive sum.
std::string format_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace ferry::runtime
