// Where each node of a graph goes on a target: the device as it is, the device after a legalization
// rewrite, the host (fallback), or nowhere. The reasons are the ones `ferry check` prints: a missing
// op, an opset out of range, a dtype, an attribute value, an input that must be constant, a
// data-dependent output shape, control flow.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/target.h"

namespace ferry::targets {

enum class Placement { kDevice, kRewritten, kHost, kUnsupported };
// "device", "rewritten", "host fallback", "unsupported"
const char* placement_name(Placement p);

struct NodePlacement {
  Placement placement = Placement::kDevice;
  std::string reason;  // why not the device as it is ("" on the device)
  std::string rule;    // the legalization rule (kRewritten)
};

// Why the target's device cannot run n as it is; empty when it can. `data_dependent` is set when the
// reason is a data-dependent shape (which the profile's data_dependent_shapes routes).
struct Rejection {
  std::string reason;
  bool data_dependent = false;
  bool empty() const { return reason.empty(); }
};

// Values of g whose shape depends on input data: outputs of data-dependent ops (NonZero, Unique, ...,
// and ops the profile marks) and what is computed from them without a static shape.
std::set<const ir::Value*> data_dependent_values(const Target& t, const ir::Graph& g);

Rejection device_rejects(const Target& t, const ir::Node& n, const std::set<const ir::Value*>& data_dependent);

// Whether a legalization rule's output runs on t (every emitted op, or a rule for it, at n's opset).
bool rewrite_runs_on(const Target& t, const std::string& rule_name, const ir::Node& n);

NodePlacement place_node(const Target& t, const Target* host, const ir::Node& n,
                         const std::set<const ir::Value*>& data_dependent);

// Placements of g's nodes, in g's order.
std::vector<NodePlacement> place_graph(const Target& t, const Target* host, const ir::Graph& g);

}  // namespace ferry::targets
