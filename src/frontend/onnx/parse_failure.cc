#include "frontend/onnx/parse_failure.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace ferry::frontend {

namespace {

// The messages on the path from a model to its subgraphs, and the field numbers that lead on
// (onnx.proto: ModelProto.graph 7 and .functions 25, FunctionProto.node 7, GraphProto.node 1,
// NodeProto.attribute 5, AttributeProto.g 6 and .graphs 11).
enum class Msg { kModel, kFunction, kGraph, kNode, kAttribute };

std::optional<Msg> child(Msg m, uint64_t field) {
  switch (m) {
    case Msg::kModel: return field == 7 ? std::optional(Msg::kGraph) : field == 25 ? std::optional(Msg::kFunction) : std::nullopt;
    case Msg::kFunction: return field == 7 ? std::optional(Msg::kNode) : std::nullopt;
    case Msg::kGraph: return field == 1 ? std::optional(Msg::kNode) : std::nullopt;
    case Msg::kNode: return field == 5 ? std::optional(Msg::kAttribute) : std::nullopt;
    case Msg::kAttribute: return field == 6 || field == 11 ? std::optional(Msg::kGraph) : std::nullopt;
  }
  return std::nullopt;
}

bool read_varint(std::string_view b, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && pos < b.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(b[pos++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

}  // namespace

int subgraph_nesting(std::string_view b) {
  struct Open {
    Msg msg;
    size_t end;
    int depth;  // subgraph levels above and including this message
  };
  std::vector<Open> stack{{Msg::kModel, b.size(), 0}};
  int deepest = 0;
  size_t pos = 0;
  // Every field must end inside the message that holds it; where one does not, the walk stops (the bytes
  // are malformed). So `pos` only moves forward and never past the innermost open message's end, which
  // bounds the walk by the input's length (a length that wrapped a child's end around once sent it
  // back to the start, forever).
  while (!stack.empty()) {
    const size_t end = stack.back().end;
    if (pos == end) {
      stack.pop_back();
      continue;
    }
    const std::string_view message = b.substr(0, end);
    uint64_t tag, len;
    if (!read_varint(message, pos, tag)) break;
    switch (tag & 7) {
      case 0:
        if (!read_varint(message, pos, len)) return deepest;
        continue;
      case 1:
      case 5: {
        const size_t width = (tag & 7) == 1 ? 8 : 4;
        if (width > end - pos) return deepest;
        pos += width;
        continue;
      }
      case 2: break;
      default: return deepest;  // groups (3, 4) or garbage: ONNX uses neither
    }
    if (!read_varint(message, pos, len) || len > end - pos) return deepest;
    const Open& top = stack.back();
    if (auto m = child(top.msg, tag >> 3)) {
      const int depth = top.depth + (top.msg == Msg::kAttribute ? 1 : 0);
      deepest = std::max(deepest, depth);
      stack.push_back({*m, pos + static_cast<size_t>(len), depth});
    } else {
      pos += static_cast<size_t>(len);
    }
  }
  return deepest;
}

std::string model_parse_error(const std::string& label, std::string_view bytes) {
  // Protobuf's limit of 100 nested messages in subgraph levels: 3 messages each (graph, node,
  // attribute), plus the model and a value's type (value info, type, tensor type, shape, dim).
  constexpr int kMostNesting = 31;
  const int nesting = subgraph_nesting(bytes);
  if (nesting > kMostNesting)
    return label + ": not a valid ONNX model: its If/Loop/Scan bodies nest " + std::to_string(nesting) +
           " levels deep, more than the " + std::to_string(kMostNesting) +
           " that ferry reads (protobuf refuses messages nested over 100 deep)";
  return label + ": not a valid ONNX model (the protobuf does not parse: truncated or not an ONNX file)";
}

}  // namespace ferry::frontend
