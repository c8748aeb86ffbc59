// Graph-editing helpers every pass uses: who consumes a value (subgraph uses included), replacing
// uses, removing nodes, building the fused node with merged provenance, reading small constants.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "passes/pipeline.h"

namespace ferry::passes {

// What a pass sees besides the graph.
struct PassContext {
  const OptimizeOptions* options = nullptr;
  ir::Model* model = nullptr;
};

// Uses of values in a graph: nodes that read a value (a node whose subgraph reads an outer value counts
// as a user of it), and whether it is a graph output.
class Uses;

// The fixed-point loop of the pattern passes: walks the nodes in order, calling `rewrite_at(node, uses)`
// until one call rewrites the graph (returns true). The node list and the uses changed then, so the
// walk starts again with fresh uses; it ends when a whole walk rewrites nothing. Returns the number of
// rewrites (what the pass reports).
Result<int> rewrite_until_fixed(ir::Graph& g, const std::function<Result<bool>(ir::Node&, const Uses&)>& rewrite_at);

class Uses {
 public:
  explicit Uses(const ir::Graph& g);
  const std::vector<ir::Node*>& users(const ir::Value* v) const;
  bool is_output(const ir::Value* v) const { return outputs_.count(v) != 0; }
  // Whether a subgraph of one of the graph's nodes reads v (an outer-scope use).
  bool read_by_subgraph(const ir::Value* v) const { return subgraph_reads_.count(v) != 0; }
  // Exactly one user node (once, through one input slot) and not a graph output: safe to fuse away.
  bool single_use(const ir::Value* v) const;
  // Number of (node, input slot) reads plus graph-output uses.
  int use_count(const ir::Value* v) const;

 private:
  std::map<const ir::Value*, std::vector<ir::Node*>> users_;
  std::map<const ir::Value*, int> counts_;
  std::set<const ir::Value*> outputs_;
  std::set<const ir::Value*> subgraph_reads_;
  std::vector<ir::Node*> none_;
};

// The uses of the graph whose kernels are being prepared, installed for this thread while the object
// lives. Code that asks about one value's readers from inside a per-node step (a kernel's create)
// looks them up here instead of scanning the graph, which made preparing a long chain quadratic
// (a million-node graph took hours).
class PreparingUses {
 public:
  PreparingUses(const ir::Graph& g, const Uses& uses);
  ~PreparingUses();
  PreparingUses(const PreparingUses&) = delete;
  PreparingUses& operator=(const PreparingUses&) = delete;
  // The installed uses when they are g's, else null (then scan g).
  static const Uses* of(const ir::Graph* g);

 private:
  const ir::Graph* graph_;
  const Uses* uses_;
  const PreparingUses* outer_;
};

// Every read of `from` in g (node inputs, subgraph outer-scope uses, graph outputs) now reads `to`.
// A graph output keeps its name: when `from` is a graph output, `to` must be produced by a node of g
// and not be a graph input/output itself; then `to` takes over `from`'s name. Returns false (and
// changes nothing) when that is impossible.
bool replace_value(ir::Graph& g, ir::Value* from, ir::Value* to);

// Removes a node (its outputs lose their producer; callers make sure nothing reads them).
void remove_node(ir::Graph& g, ir::Node* n);
void remove_nodes(ir::Graph& g, const std::set<ir::Node*>& dead);

// Drops values no node, subgraph or graph output uses and that are not graph inputs; returns how many
// of them were constants.
int prune_values(ir::Graph& g);

// Replaces the covered nodes by a new node placed where the last covered node was. The new node takes
// `out` (an output of a covered node, kept with its name and onnx_name) as its only output, the union of
// the covered nodes' provenance in graph order, and the name of the node that produced `out`.
ir::Node* replace_with(ir::Graph& g, const std::vector<ir::Node*>& covered, const std::string& op_type,
                       const std::string& domain, int opset, std::vector<ir::Value*> inputs, ir::Value* out);

// A new constant value in g.
ir::Value* add_constant(ir::Graph& g, const std::string& base, Tensor t);

// The node of type `op` (default domain, one output, input 0 present) that produces v, else null.
ir::Node* producer_op(const ir::Value* v, const char* op);

// The data of v when it is a constant (initializer), else null.
const Tensor* constant_of(const ir::Value* v);
// A floating constant with one element (any shape of numel 1).
std::optional<double> scalar_of(const ir::Value* v);
bool is_scalar(const ir::Value* v, double want, double tol = 1e-6);

// Static dims of v, when its shape is fully known.
std::optional<std::vector<int64_t>> static_shape(const ir::Value* v);
// Same known shape (dims equal by value, or by symbol when both are named).
bool same_shape(const ir::Value* a, const ir::Value* b);

// The other input of a binary node (the one that is not v); null if v is not an input or both are v.
ir::Value* other_input(const ir::Node* n, const ir::Value* v);

// An inference BatchNormalization's statistics folded into one scale and shift per channel:
// s = scale / sqrt(var + epsilon), t = B - mean * s. nullopt unless it is inference-only (no training
// mode, no running-stat outputs, spatial) with constant 1-D statistics of one length and var + eps > 0.
struct BnParams {
  std::vector<double> s, t;  // per channel
};
std::optional<BnParams> bn_params(const ir::Node& bn);

ir::Attribute make_ints(std::vector<int64_t> v);
ir::Attribute make_floats(std::vector<float> v);
ir::Attribute make_strings(std::vector<std::string> v);
ir::Attribute make_float(float v);
ir::Attribute make_int(int64_t v);
ir::Attribute make_string(std::string v);

}  // namespace ferry::passes
