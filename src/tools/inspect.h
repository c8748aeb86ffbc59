// `ferry inspect`: what a model is, without running it. Inputs/outputs, opsets, an op histogram
// (subgraph nodes included), parameters from initializers and from the float tensors of Constant nodes
// (exporters such as Paddle's store weights that way), which ops ferry cannot run yet, and an estimate
// of the FLOPs from the inferred shapes, or, when a node's shapes are unknown, what --shape it needs.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::tools {

struct TensorDecl {
  std::string name;
  std::string kind;   // "tensor", "sequence", "optional"
  std::string dtype;  // "float32", "?" when undeclared
  std::string shape;  // "[1,3,batch,?]", "?" when the rank is unknown
};

struct ModelSummary {
  std::string path;
  int64_t ir_version = 0;
  std::string producer;  // "pytorch 1.13.1"
  std::vector<ir::OpsetImport> opsets;
  std::vector<TensorDecl> inputs, outputs;
  int64_t nodes = 0;            // all nodes, subgraphs included
  int64_t subgraph_nodes = 0;   // of which inside If/Loop/Scan bodies
  int64_t subgraphs = 0;
  std::map<std::string, int64_t> op_histogram;  // "Conv", "com.microsoft.FusedMatMul"
  std::map<std::string, int64_t> unsupported;   // op types ferry has no kernel for, with counts
  int64_t parameters = 0;       // elements of all initializers and float Constant tensors (subgraphs included)
  int64_t parameter_bytes = 0;
  int64_t initializers = 0;
  int64_t constant_parameters = 0;  // of `parameters`: in Constant nodes (attribute `value`)
  int64_t constant_nodes = 0;       // Constant nodes holding a float tensor
  // Graph inputs with dynamic dims, as the --shape argument that fixes them ("x=1,3,<height>,<width>").
  std::vector<std::pair<std::string, std::string>> dynamic_inputs;
  std::string first_unknown_flops_node;  // label of the first node whose FLOPs need shapes
  std::string opset_warning;             // frontend::newer_opset_note; "" when ferry knows the opset
  // FLOP estimate over the main graph's nodes (2 per multiply-add).
  double flops = 0;
  int64_t flops_counted_nodes = 0;   // nodes that contributed
  int64_t flops_unknown_nodes = 0;   // compute nodes whose shapes are not static
  std::map<std::string, double> flops_by_op;
};

struct InspectOptions {
  // Concrete shapes for inputs with dynamic dims; shapes are re-inferred with them so the FLOPs of
  // a dynamic model can be counted.
  std::map<std::string, std::vector<int64_t>> shapes;
};

// Loads the model (without rejecting unsupported ops: inspecting a model ferry cannot run yet is
// the point of the command) and summarises it.
Result<ModelSummary> inspect_model(const std::string& path, const InspectOptions& opts = {});
ModelSummary summarize_model(const ir::Model& model);

// Estimated FLOPs of one node from its inputs' and outputs' shapes; nullopt when a shape it needs
// is unknown, 0 for data movement and ops not modelled.
std::optional<double> estimate_node_flops(const ir::Node& node);

std::string format_summary(const ModelSummary& s);
nlohmann::json summary_to_json(const ModelSummary& s);

}  // namespace ferry::tools
