#include "passes/precision_lists.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ferry::passes {

MixLists default_mix_lists() {
  MixLists l;
  // The ops that do the arithmetic (and gain from fp16 on real hardware): convolutions, GEMMs,
  // attention, pooling. Accumulation is fp32 on every device we model.
  l.allow = {"Conv",          "ConvTranspose", "FusedConv",    "MatMul",           "Gemm",
             "FusedMatMul",   "FusedAttention", "Attention",   "AveragePool",      "MaxPool",
             "GlobalAveragePool", "GlobalMaxPool", "Einsum"};
  // Ops whose fp16 result loses too much (wide dynamic range, reductions over many values, the
  // exponent/log family): ATC's black list has the same kind.
  l.deny = {"Exp",           "Log",          "Pow",          "Sqrt",          "Reciprocal",
            "ReduceSum",     "ReduceMean",   "ReduceL1",     "ReduceL2",      "ReduceLogSum",
            "ReduceLogSumExp", "ReduceSumSquare", "ReduceProd", "Softmax",     "LogSoftmax",
            "LayerNormalization", "InstanceNormalization", "GroupNormalization", "BatchNormalization",
            "FusedBatchNorm",
            "LpNormalization", "MeanVarianceNormalization", "Erf", "CumSum",    "Softplus",
            "Range",         "Div",          "RNN",          "LSTM",          "GRU"};
  // Elementwise and data movement: they follow.
  l.follow = {"Add",     "Sub",     "Mul",     "Relu",    "LeakyRelu", "PRelu",     "Clip",   "Sigmoid",
              "Tanh",    "HardSigmoid", "HardSwish", "Gelu", "Elu",   "Neg",       "Abs",    "Max",
              "Min",     "Concat",  "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Slice",
              "Split",   "Gather",  "Expand",  "Tile",    "Pad",     "Resize",    "Where",  "Identity",
              "Dropout", "DepthToSpace", "SpaceToDepth", "Cast", "Mish", "Sign",  "Floor",  "Ceil",
              "ChannelShuffle"};
  return l;
}

namespace {

int line_of(const std::string& text, size_t byte) {
  int line = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

Status apply_mixlist_file(const std::string& path, MixLists& lists) {
  std::ifstream f(path);
  if (!f) return Status::io("cannot read the mixlist file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::invalid(path + ":" + std::to_string(line_of(text, e.byte)) + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) return Status::invalid(path + ": the mixlist must be a JSON object of lists");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    std::set<std::string>* target = nullptr;
    if (key == "allow" || key == "white-list") target = &lists.allow;
    else if (key == "deny" || key == "black-list") target = &lists.deny;
    else if (key == "follow" || key == "gray-list" || key == "grey-list") target = &lists.follow;
    if (!target)
      return Status::invalid(path + ": unknown key '" + key +
                             "' (expected allow/deny/follow, or ATC's white-list/black-list/gray-list)");
    if (!it->is_object()) return Status::invalid(path + ": '" + key + "' must be an object with to-add / to-remove");
    for (auto op = it->begin(); op != it->end(); ++op) {
      if (op.key() != "to-add" && op.key() != "to-remove")
        return Status::invalid(path + ": unknown key '" + key + "." + op.key() + "' (expected to-add or to-remove)");
      if (!op->is_array()) return Status::invalid(path + ": '" + key + "." + op.key() + "' must be a list of op types");
      for (const auto& name : *op) {
        if (!name.is_string() || name.get<std::string>().empty())
          return Status::invalid(path + ": '" + key + "." + op.key() + "' holds " + name.dump() + ", not an op type");
        const std::string n = name.get<std::string>();
        if (op.key() == "to-add") {
          lists.allow.erase(n);
          lists.deny.erase(n);
          lists.follow.erase(n);
          target->insert(n);
        } else {
          target->erase(n);
        }
      }
    }
  }
  return Status();
}

bool value_preserving(const std::string& op) {
  static const std::set<std::string> ops = {
      "Reshape", "Flatten", "Squeeze",   "Unsqueeze", "Transpose", "Identity", "Concat",      "Split",
      "Slice",   "Gather",  "GatherElements", "GatherND", "Expand", "Tile",  "MaxPool",     "GlobalMaxPool",
      "ReduceMax", "ReduceMin", "Relu", "Max",     "Min",       "Neg",      "Abs",         "DepthToSpace",
      "SpaceToDepth", "Where", "Dropout", "Pad",   "Clip",      "Sign",     "Floor",       "Ceil",
      "ChannelShuffle"};
  return ops.count(op) != 0;
}

}  // namespace ferry::passes
