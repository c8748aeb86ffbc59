// Evaluates, with the reference kernels, every node whose inputs are all constants, and Shape/Size of
// values whose shape is static (so once input shapes are fixed, Shape->Gather->Unsqueeze->Concat->Reshape
// chains fold away). Outputs become initializers. Not folded: random ops, control flow, non-tensor
// outputs, graph outputs, and outputs over 16 MiB that are larger than their inputs (ConstantOfShape,
// Expand, Tile... would bloat the model instead of shrinking the work).
#include <set>

#include "ops/op.h"
#include "passes/passes.h"

namespace ferry::passes {

namespace {
constexpr int64_t kMaxFoldedBytes = int64_t{16} << 20;

bool never_fold(const ir::Node& n) {
  static const std::set<std::string> kRandom = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                "RandomUniformLike", "Multinomial", "Bernoulli"};
  return kRandom.count(n.op_type) || !n.subgraphs().empty();
}

// Shape (with opset-15 start/end) and Size of a statically shaped value.
std::optional<Tensor> fold_shape_op(const ir::Node& n) {
  if (!n.domain.empty() || !n.has_input(0)) return std::nullopt;
  auto dims = static_shape(n.inputs[0]);
  if (!dims) return std::nullopt;
  if (n.op_type == "Size") {
    int64_t numel = 1;
    for (int64_t d : *dims) numel *= d;
    return Tensor::scalar<int64_t>(numel);
  }
  if (n.op_type != "Shape") return std::nullopt;
  const int64_t r = static_cast<int64_t>(dims->size());
  int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> out(dims->begin() + start, dims->begin() + std::max(start, end));
  return Tensor::from_vector(out);
}

bool all_inputs_constant(const ir::Node& n) {
  for (const ir::Value* v : n.inputs)
    if (v && !v->is_constant()) return false;
  return true;
}
}  // namespace

Result<int> fold_constants(ir::Graph& g, const PassContext&) {
  const ops::OpRegistry& reg = ops::OpRegistry::global();
  std::set<const ir::Value*> outputs(g.outputs.begin(), g.outputs.end());
  std::set<ir::Node*> folded;
  for (auto& node : g.nodes) {
    ir::Node& n = *node;
    if (never_fold(n)) continue;
    bool ok = n.num_outputs() > 0;
    for (const ir::Value* v : n.outputs) ok = ok && v && v->kind == ir::ValueKind::kTensor && !outputs.count(v);
    if (!ok) continue;
    std::vector<Tensor> results;
    if (auto t = fold_shape_op(n)) {
      results.push_back(*t);
    } else {
      if (!all_inputs_constant(n)) continue;
      const ops::OpSchema* s = reg.find(n.domain, n.op_type, n.opset);
      if (!s || !s->kernel) continue;
      std::vector<RtValue> in_vals;
      in_vals.reserve(n.inputs.size());
      int64_t in_bytes = 0;
      for (const ir::Value* v : n.inputs) {
        in_vals.push_back(v ? RtValue(v->initializer) : RtValue::none());
        if (v) in_bytes += static_cast<int64_t>(v->initializer.nbytes());
      }
      std::vector<const RtValue*> ptrs;
      for (size_t i = 0; i < n.inputs.size(); ++i) ptrs.push_back(n.inputs[i] ? &in_vals[i] : nullptr);
      ops::KernelContext kc(n, ptrs, nullptr);
      // A kernel that fails here (bad constant input) fails the same way at run time; leave it be.
      if (!s->kernel(kc).ok()) continue;
      bool good = true;
      for (int i = 0; i < n.num_outputs(); ++i) {
        const RtValue& r = kc.outputs()[i];
        if (!r.is_tensor() || !r.tensor.is_plain()) good = false;
        else if (static_cast<int64_t>(r.tensor.nbytes()) > std::max(kMaxFoldedBytes, in_bytes)) good = false;
        if (good) results.push_back(r.tensor);
      }
      if (!good) continue;
    }
    for (int i = 0; i < n.num_outputs(); ++i) {
      ir::Value* v = n.outputs[i];
      v->initializer = results[i];
      v->dtype = results[i].dtype();
      v->shape = to_shape(results[i].dims());
    }
    folded.insert(&n);
  }
  remove_nodes(g, folded);
  return static_cast<int>(folded.size());
}

}  // namespace ferry::passes
