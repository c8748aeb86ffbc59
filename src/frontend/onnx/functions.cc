#include "frontend/onnx/functions.h"

namespace ferry::frontend {

const onnx::FunctionProto* FunctionTable::find(const std::string& domain, const std::string& name) const {
  auto it = by_key.find({domain == "ai.onnx" ? "" : domain, name});
  return it == by_key.end() ? nullptr : it->second;
}

FunctionTable make_function_table(const onnx::ModelProto& mp) {
  FunctionTable t;
  for (const auto& f : mp.functions()) t.by_key[{f.domain() == "ai.onnx" ? "" : f.domain(), f.name()}] = &f;
  return t;
}

namespace {

constexpr int kMaxDepth = 64;  // nested calls; deeper means recursion, which ONNX forbids

void rename_in_graph(onnx::GraphProto& g, const std::map<std::string, std::string>& names) {
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input()) {
      auto it = names.find(in);
      if (it != names.end()) in = it->second;
    }
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_in_graph(*a.mutable_g(), names);
      for (auto& sg : *a.mutable_graphs()) rename_in_graph(sg, names);
    }
  }
  for (auto& o : *g.mutable_output()) {
    auto it = names.find(o.name());
    if (it != names.end()) o.set_name(it->second);
  }
}

Status expand(const onnx::NodeProto& call, const onnx::FunctionProto& fn, const FunctionTable& fns, int depth,
              std::vector<onnx::NodeProto>& out, std::vector<int64_t>& opsets, int64_t inherited_opset);

Status emit(const onnx::NodeProto& node, const FunctionTable& fns, int depth, std::vector<onnx::NodeProto>& out,
            std::vector<int64_t>& opsets, int64_t opset) {
  if (const onnx::FunctionProto* fn = fns.find(node.domain(), node.op_type())) {
    if (depth >= kMaxDepth)
      return Status::invalid("function '" + node.op_type() + "' calls itself (directly or not) more than " +
                             std::to_string(kMaxDepth) + " levels deep");
    return expand(node, *fn, fns, depth + 1, out, opsets, opset);
  }
  out.push_back(node);
  opsets.push_back(opset);
  return Status();
}

Status expand(const onnx::NodeProto& call, const onnx::FunctionProto& fn, const FunctionTable& fns, int depth,
              std::vector<onnx::NodeProto>& out, std::vector<int64_t>& opsets, int64_t inherited_opset) {
  std::string prefix = (call.name().empty() ? fn.name() : call.name()) + "/";
  std::map<std::string, std::string> names;
  for (int i = 0; i < fn.input_size(); ++i) names[fn.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < fn.output_size(); ++i) names[fn.output(i)] = i < call.output_size() ? call.output(i) : "";
  std::map<std::string, const onnx::AttributeProto*> call_attrs;
  for (const auto& a : call.attribute()) call_attrs[a.name()] = &a;
  int64_t body_opset = 0;
  for (const auto& o : fn.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") body_opset = o.version();
  if (body_opset == 0) body_opset = inherited_opset;
  for (const auto& bn : fn.node()) {
    onnx::NodeProto n = bn;
    n.set_name(prefix + (bn.name().empty() ? bn.op_type() : bn.name()));
    for (const auto& o : bn.output()) {
      if (!o.empty() && !names.count(o)) names[o] = prefix + o;
    }
    for (auto& in : *n.mutable_input()) {
      if (in.empty()) continue;
      auto it = names.find(in);
      in = it != names.end() ? it->second : prefix + in;
    }
    for (auto& o : *n.mutable_output()) {
      if (o.empty()) continue;
      o = names[o];
    }
    // Attribute references take the caller's value; unset references are dropped (the op's default).
    auto* attrs = n.mutable_attribute();
    for (int k = attrs->size() - 1; k >= 0; --k) {
      onnx::AttributeProto& a = (*attrs)[k];
      if (a.ref_attr_name().empty()) {
        if (a.has_g()) rename_in_graph(*a.mutable_g(), names);
        continue;
      }
      auto it = call_attrs.find(a.ref_attr_name());
      if (it == call_attrs.end()) {
        attrs->DeleteSubrange(k, 1);
        continue;
      }
      std::string name = a.name();
      a = *it->second;
      a.set_name(name);
    }
    bool local_domain = n.domain().empty() || n.domain() == "ai.onnx";
    FERRY_RETURN_IF_ERROR(emit(n, fns, depth, out, opsets, local_domain ? body_opset : 0));
  }
  return Status();
}

}  // namespace

Result<std::vector<onnx::NodeProto>> inline_function_calls(const onnx::GraphProto& gp, const FunctionTable& fns,
                                                           std::vector<int64_t>& opsets) {
  std::vector<onnx::NodeProto> out;
  opsets.clear();
  if (fns.by_key.empty()) {
    out.assign(gp.node().begin(), gp.node().end());
    opsets.assign(out.size(), 0);
    return out;
  }
  for (const auto& n : gp.node()) {
    Status s = emit(n, fns, 0, out, opsets, 0);
    if (!s.ok()) return s.with_context("while inlining the call '" + n.name() + "' (" + n.op_type() + ")");
  }
  return out;
}

}  // namespace ferry::frontend
