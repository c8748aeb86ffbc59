// Shared harness for op unit tests: run one node's reference kernel on given inputs, and build
// attributes tersely.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops::testing {

struct OpRun {
  Status status;
  std::vector<RtValue> outputs;
};

using Attrs = std::map<std::string, ir::Attribute>;

// Runs `op` (default domain) at `opset` with `inputs`; `omitted[i]` leaves input i out (an omitted
// optional input). The node has `num_outputs` outputs.
inline OpRun run_node(const std::string& op, const std::vector<RtValue>& inputs, Attrs attrs, int opset,
                      int num_outputs = 1, const std::vector<bool>& omitted = {}) {
  ir::Graph g;
  ir::Node* n = g.add_node(op, "n0");
  n->opset = opset;
  n->attrs = std::move(attrs);
  std::vector<const RtValue*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool skip = i < omitted.size() && omitted[i];
    ir::Value* v = skip ? nullptr : g.add_value("in" + std::to_string(i));
    if (v && inputs[i].is_tensor()) v->dtype = inputs[i].tensor.dtype();
    n->inputs.push_back(v);
    ptrs.push_back(skip ? nullptr : &inputs[i]);
  }
  for (int i = 0; i < num_outputs; ++i) n->outputs.push_back(g.add_value("out" + std::to_string(i)));
  const OpSchema* s = OpRegistry::global().find("", op, opset);
  if (!s) return {Status::unsupported("no schema for " + op), {}};
  KernelContext ctx(*n, ptrs, nullptr);
  OpRun r;
  r.status = s->kernel(ctx);
  r.outputs = ctx.outputs();
  return r;
}

inline OpRun run_node(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs, int opset,
                      int num_outputs = 1) {
  return run_node(op, std::vector<RtValue>(inputs.begin(), inputs.end()), std::move(attrs), opset, num_outputs);
}

inline ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute float_attr(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
inline ir::Attribute string_attr(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

}  // namespace ferry::ops::testing
