// The partitioner: legalizes what the device lacks (when a rule's rewrite runs there, so a lone
// unsupported node does not bounce the tensors to the host and back), assigns every node to the
// device or the host, reorders the graph (still topological) so device nodes form maximal runs, and
// lists the transfers at the borders with their bytes per inference.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "passes/legalize.h"
#include "targets/placement.h"
#include "targets/target.h"

namespace ferry::targets {

// One value that crosses between device and host.
struct Transfer {
  std::string value;      // the value's name (its onnx_name where it has one)
  bool to_device = true;  // host -> device, else device -> host
  int64_t bytes = -1;     // -1: shape not static
  std::string consumer;   // the first node on the other side that reads it
};

struct Segment {
  bool device = true;
  std::vector<std::string> nodes;  // node names, in execution order
};

struct Partition {
  std::vector<NodePlacement> placements;  // per node of the graph after partitioning, in its (new) order
  std::map<std::string, NodePlacement> by_name;  // the same, by node name
  std::vector<Segment> segments;          // maximal runs, in execution order
  std::vector<Transfer> transfers;        // device <-> host inside the model (fallback borders)
  std::vector<passes::LegalizeApplied> rewrites;
  int64_t input_bytes = 0, output_bytes = 0;  // model inputs to the device, outputs back (-1 unknown)
  int64_t transfer_bytes = 0;                 // sum over transfers (-1 when one is unknown)
  int device_nodes = 0, host_nodes = 0, unsupported_nodes = 0;
  bool has_host() const { return host_nodes > 0; }
};

struct PartitionOptions {
  bool legalize = true;  // apply the rewrites check reports as "rewritten"
};

// Partitions model.graph for t (host: the fallback target, or null). The graph is rewritten
// (legalized) and reordered in place; an unsupported node is reported, not an error.
Result<Partition> partition(ir::Model& model, const Target& t, const Target* host, const PartitionOptions& opts = {});

// numel * element size of a value with a static shape, else -1.
int64_t value_bytes(const ir::Value* v);

}  // namespace ferry::targets
