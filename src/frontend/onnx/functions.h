// Model-local functions (ModelProto.functions, as torch's dynamo exporter writes them) are inlined at
// import: each call becomes the function's body with its values renamed under the caller's name.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "onnx/onnx_pb.h"

namespace ferry::frontend {

struct FunctionTable {
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*> by_key;  // (domain, name)
  const onnx::FunctionProto* find(const std::string& domain, const std::string& name) const;
};

FunctionTable make_function_table(const onnx::ModelProto& mp);

// The graph's nodes with every function call expanded (recursively). `opsets` gets, per resulting node,
// the opset its domain has in the function that contained it (0: the model's own).
Result<std::vector<onnx::NodeProto>> inline_function_calls(const onnx::GraphProto& gp, const FunctionTable& fns,
                                                           std::vector<int64_t>& opsets);

}  // namespace ferry::frontend
