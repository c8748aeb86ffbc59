// Legalization: rewrites of an op a target lacks into ops it has (docs/targets.md). One rule per file
// (src/passes/legalize_*.cc). A rule says which op it rewrites, whether it applies to a given node
// (some forms have no rewrite: an Einsum equation with repeated letters), and which op types its
// rewrite emits, so `ferry check` can tell whether the result would run on the device without
// rewriting anything. The rewritten nodes carry the original node's provenance, and the value that
// replaces the original output keeps its name and onnx_name.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "passes/pass_util.h"
#include "passes/pipeline.h"

namespace ferry::passes {

struct LegalizeRule {
  const char* name;     // "legalize_hard_swish": the pass name, shown by check as the placement
  const char* op_type;  // the op it rewrites (default domain)
  std::vector<std::string> emits;  // op types the rewrite produces
  std::function<bool(const ir::Node&)> applies;
  // Rewrites n in g; returns false (graph unchanged) when the node does not match after all.
  std::function<Result<bool>(ir::Graph& g, ir::Node* n)> rewrite;
};

// Every rule, in the order they are tried.
const std::vector<LegalizeRule>& legalize_rules();
// The rule for this node (its op type, and applies() holds), or null.
const LegalizeRule* legalize_rule_for(const ir::Node& n);

struct LegalizeApplied {
  std::string rule;
  std::string node;  // the original node's name
};

// Rewrites every node of g (and subgraphs) for which `wants(node)` is true and a rule applies, until
// nothing changes (a rewrite may emit an op that itself needs a rule: Mish -> Softplus -> Log/Exp).
// Shapes are re-inferred and the graph verified afterwards.
Result<int> legalize(ir::Model& model, const std::function<bool(const ir::Node&)>& wants,
                     std::vector<LegalizeApplied>* applied = nullptr);

// Builder helpers the rules share: a node in g just before `before`, with the given inputs, one
// fresh output, the provenance of `origin` and a name derived from origin's.
ir::Value* emit(ir::Graph& g, const ir::Node& origin, const std::string& op, std::vector<ir::Value*> inputs,
                std::map<std::string, ir::Attribute> attrs = {});
// A scalar constant of x's element type (float32 when x's is unknown).
ir::Value* scalar_like(ir::Graph& g, const ir::Value* x, double v, const std::string& base);
ir::Value* int64_constant(ir::Graph& g, std::vector<int64_t> v, const std::string& base);
// A reduction over `axes` (empty: all axes) in the axes convention of origin's opset (an attribute
// before ReduceSum-13 / the other reductions' opset 18, an input from then on).
ir::Value* emit_reduce(ir::Graph& g, const ir::Node& origin, const std::string& op, ir::Value* x,
                       const std::vector<int64_t>& axes, int64_t keepdims);
// The axes a reduction node reduces (attribute or constant input 1); nullopt when they are not known
// at compile time. Empty: all axes (unless noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduce_axes_of(const ir::Node& n);
// (x - mean(x)) / sqrt(var(x) + eps) over `axes`, the variance as mean((x - mean)^2).
ir::Value* emit_normalize(ir::Graph& g, const ir::Node& origin, ir::Value* x, const std::vector<int64_t>& axes,
                          double eps);
// A per-channel parameter [C] shaped [C, 1, ..., 1] (`trailing` ones) to broadcast against axis 1.
ir::Value* emit_channel_param(ir::Graph& g, const ir::Node& origin, ir::Value* p, int trailing);
// Makes `last` (produced by the final emitted node) take over origin's output 0 and removes origin.
bool finish_rewrite(ir::Graph& g, ir::Node* origin, ir::Value* last);

// Every rule, in the order they are tried: src/passes/legalize_<stem>.cc defines rule_<stem>(), whose
// name is "legalize_<stem>". This one list declares them and makes legalize_rules(); pass_by_name gives
// each rule as a pass over every node it applies to (for .ir fixtures).
#define FERRY_LEGALIZE_RULES(X)                                                                          \
  X(hard_swish) X(hard_sigmoid) X(gelu) X(mish) X(silu) X(softplus) X(layer_normalization)               \
  X(group_normalization) X(instance_normalization) X(reduce_l2) X(reduce_log_sum_exp) X(prelu) X(cast_like) \
  X(upsample) X(resize) X(einsum)

#define FERRY_DECLARE_LEGALIZE_RULE(stem) LegalizeRule rule_##stem();
FERRY_LEGALIZE_RULES(FERRY_DECLARE_LEGALIZE_RULE)
#undef FERRY_DECLARE_LEGALIZE_RULE

// Runs one rule over every node of g it applies to (the rule as a pass: pass_by_name).
Result<int> apply_rule_everywhere(ir::Graph& g, const char* rule_name);

}  // namespace ferry::passes
