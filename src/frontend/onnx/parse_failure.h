// Why a ModelProto did not parse, for the error message: protobuf only says that it failed. The cause
// worth naming is nesting: protobuf refuses messages nested more than 100 deep, which a chain of If /
// Loop / Scan bodies inside each other reaches at about 33 levels (each level nests a graph, a node and
// an attribute). Found by walking the wire format iteratively, so any depth is measured without recursion.
#pragma once
#include <string>
#include <string_view>

namespace ferry::frontend {

// How deep subgraphs (attribute graphs, in the main graph and in model-local functions) nest in the
// serialized ModelProto `bytes`, as far as its wire format can be read.
int subgraph_nesting(std::string_view bytes);

// "LABEL: not a valid ONNX model (...)", saying why when the nesting explains it.
std::string model_parse_error(const std::string& label, std::string_view bytes);

}  // namespace ferry::frontend
