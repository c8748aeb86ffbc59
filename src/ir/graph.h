// The portable IR: ONNX semantics, provenance on every node and value.
// A Graph owns its Values and Nodes. Nodes are kept in topological order. A subgraph (If/Loop/Scan
// body) is a Graph whose `parent` is the enclosing graph; its nodes may use Values of any ancestor
// (ONNX outer-scope references), which the executor resolves through nested scopes.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace ferry::ir {

class Graph;
class Node;

// What a value holds at graph level: a tensor, a sequence of tensors, or an optional.
enum class ValueKind { kTensor, kSequence, kOptional };

struct Value {
  std::string name;  // unique within its graph
  ValueKind kind = ValueKind::kTensor;
  DType dtype = DType::kUndefined;  // element type (for sequences/optionals: of the elements)
  std::optional<Shape> shape;       // nullopt: rank unknown
  Node* producer = nullptr;         // null for graph inputs and initializers
  int producer_output = -1;
  Graph* graph = nullptr;           // the graph that owns this value
  Tensor initializer;               // defined for constants (ONNX initializers)
  bool is_graph_input = false;
  // Provenance: the ONNX tensor name this value carries (kept when passes rename or fuse).
  std::string onnx_name;

  bool is_constant() const { return initializer.defined(); }
  std::string type_string() const;  // "float32[1,3,224,224]", "seq(float32)", "?"
};

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs, kType };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  // kType (ONNX TYPE_PROTO, e.g. Optional's `type`): what a value of that type is.
  ValueKind type_kind = ValueKind::kTensor;
  DType type_dtype = DType::kUndefined;
};

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the ONNX default domain
  int opset = 0;       // the model's opset for this node's domain
  std::vector<Value*> inputs;   // nullptr: an omitted optional input
  std::vector<Value*> outputs;  // nullptr: an omitted optional output
  std::map<std::string, Attribute> attrs;
  // Provenance: the ONNX node names this node stands for (one for imported nodes; fusions merge).
  std::vector<std::string> provenance;

  bool has_attr(const std::string& n) const { return attrs.count(n) != 0; }
  const Attribute* attr(const std::string& n) const;
  int64_t attr_int(const std::string& n, int64_t dflt) const;
  float attr_float(const std::string& n, float dflt) const;
  std::string attr_string(const std::string& n, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attr_floats(const std::string& n, std::vector<float> dflt = {}) const;
  const Graph* attr_graph(const std::string& n) const;
  const Tensor* attr_tensor(const std::string& n) const;

  // Inputs that are present (not omitted).
  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[i] != nullptr; }
  int num_outputs() const { return static_cast<int>(outputs.size()); }
  bool has_output(int i) const { return i < num_outputs() && outputs[i] != nullptr; }
  // Subgraphs held in attributes (If branches, Loop/Scan bodies).
  std::vector<Graph*> subgraphs() const;
  std::string label() const;  // "Conv 'conv1'"
};

class Graph {
 public:
  std::string name;
  Graph* parent = nullptr;
  std::vector<std::unique_ptr<Node>> nodes;  // topological order
  std::vector<std::unique_ptr<Value>> values;
  std::vector<Value*> inputs;   // graph inputs without initializers first... in ONNX order
  std::vector<Value*> outputs;

  // Creates a value owned by this graph (name must be unique here; empty names get a fresh one).
  Value* add_value(std::string name);
  Node* add_node(std::string op_type, std::string name = "");
  // Looks up a value in this graph, then in ancestors (outer scope). Null when missing.
  Value* find_value(const std::string& name) const;
  Value* find_local_value(const std::string& name) const;
  // Rebuilds the name index after values were renamed or removed.
  void reindex();
  // Constant values (initializers) of this graph.
  std::vector<Value*> initializers() const;
  std::string fresh_name(const std::string& base);
  // A deep copy: new Values and Nodes (provenance, ONNX names, attributes and subgraphs included),
  // references to outer-scope values pointing into the copy's ancestors. Constant tensors share their
  // buffers with the original: passes never write into an initializer, they replace it. A subgraph is
  // cloned with its parent; clone the model (Model::clone) to copy a whole tree.
  std::unique_ptr<Graph> clone() const;

 private:
  // Copies this graph into `out` (whose parent is already the copy of this graph's parent); `map`
  // holds original -> copy for every value of the ancestors, and gets this graph's values added.
  void clone_into(Graph& out, std::map<const Value*, Value*>& map) const;
  std::map<std::string, Value*> by_name_;
  int64_t fresh_counter_ = 0;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

// A whole model: the main graph plus what ONNX says about it.
struct Model {
  std::shared_ptr<Graph> graph;
  std::vector<OpsetImport> opsets;
  int64_t ir_version = 0;
  std::string producer_name, producer_version, doc_string;
  std::map<std::string, std::string> metadata;
  std::string source_path;  // file it came from

  int64_t opset_for(const std::string& domain) const;  // 0 when not imported
  // A deep copy (Graph::clone) with the same opsets, metadata and source path: a command that needs a
  // model twice (golden and candidate, one per gear) copies it instead of reading the file again.
  std::unique_ptr<Model> clone() const;
};

// Checks structural invariants: every input is produced before use (topological order, outer scope
// allowed), single producer per value, graph outputs exist, producer links are consistent.
Status verify(const Graph& g);

// Human-readable text of the graph (one node a line, types where known, subgraphs indented). The
// grammar is in docs/ir.md; parse_model/parse_graph read it back.
std::string print_graph(const Graph& g);
// The model's opset lines followed by its graph; nodes whose opset differs from the model's print as Op@N.
std::string print_model(const Model& m);
// A string literal as the printer writes it ("..." with \" \\ \n \t escapes).
std::string quote_ir_string(const std::string& s);

// Parses the printer's text (docs/ir.md). Opset lines are optional: without any, the default domain
// gets opset 17 and com.ferry opset 1. Constants printed without data (and fixtures that give only a
// type) get a deterministic fill seeded by the value name: uniform in [-1, 1) for floats, [0, 10) for
// integers, or `= uniform(lo, hi)` explicitly. Errors name the line ("line 7: ...").
Result<std::unique_ptr<Model>> parse_model(const std::string& text);

}  // namespace ferry::ir
