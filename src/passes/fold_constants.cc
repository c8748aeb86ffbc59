// Evaluates, with the reference kernels, every node whose inputs are all constants, and Shape/Size of
// values whose shape is static (so once input shapes are fixed, Shape->Gather->Unsqueeze->Concat->Reshape
// chains fold away). Outputs become initializers. Not folded: random ops, control flow, non-tensor
// outputs, graph outputs, and outputs over 16 MiB that are larger than their inputs (ConstantOfShape,
// Expand, Tile... would bloat the model instead of shrinking the work). An If with a constant condition
// is replaced by the branch it takes.
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

Result<int> fold_constant_nodes(ir::Graph& g, const PassContext&);

// An If whose condition is a constant is replaced by the nodes of the branch it takes. (Besides saving
// the branch dispatch, this keeps the untaken branch, whose shapes may only make sense for the other
// condition, from failing inference once folding made its inputs constant.)
bool inline_constant_if(ir::Graph& g, size_t at) {
  ir::Node& n = *g.nodes[at];
  if (n.op_type != "If" || !n.domain.empty() || !n.has_input(0)) return false;
  const Tensor* c = constant_of(n.inputs[0]);
  if (!c || c->numel() != 1) return false;
  const ir::Attribute* br = n.attr(c->as_double(0) != 0 ? "then_branch" : "else_branch");
  if (!br || br->kind != ir::Attribute::Kind::kGraph || !br->g) return false;
  std::shared_ptr<ir::Graph> body = br->g;
  if (!body->inputs.empty() || body->outputs.size() != n.outputs.size()) return false;
  std::set<const ir::Value*> graph_outputs(g.outputs.begin(), g.outputs.end());
  if (std::set<const ir::Value*>(body->outputs.begin(), body->outputs.end()).size() != body->outputs.size()) return false;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const ir::Value* bo = body->outputs[i];
    // A branch output that is not computed inside the branch (an outer value) can only replace an If
    // output that is not a graph output (replace_value would have to rename an outer value).
    if (n.outputs[i] && graph_outputs.count(n.outputs[i]) && (bo->graph != body.get() || !bo->producer)) return false;
  }
  // Move the branch's values (renamed where a name is taken) and nodes into g, at the If's place.
  for (auto& v : body->values) {
    if (g.find_local_value(v->name)) v->name = g.fresh_name(v->name);
    v->graph = &g;
    g.values.push_back(std::move(v));
  }
  body->values.clear();
  g.reindex();
  std::vector<std::unique_ptr<ir::Node>> moved = std::move(body->nodes);
  body->nodes.clear();
  for (auto& m : moved) {
    for (auto& [k, a] : m->attrs) {
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) a.g->parent = &g;
      for (auto& sg : a.graphs) sg->parent = &g;
    }
    if (m->provenance.empty()) m->provenance = n.provenance;
  }
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::make_move_iterator(moved.begin()),
                 std::make_move_iterator(moved.end()));
  ir::Node* iff = g.nodes[at + moved.size()].get();
  for (size_t i = 0; i < iff->outputs.size(); ++i)
    if (iff->outputs[i] && !replace_value(g, iff->outputs[i], body->outputs[i])) return false;  // checked above
  remove_node(g, iff);
  return true;
}

Result<int> fold_constant_nodes(ir::Graph& g, const PassContext&) {
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
}  // namespace

Result<int> fold_constants(ir::Graph& g, const PassContext& ctx) {
  int changes = 0;
  while (true) {
    FERRY_ASSIGN_OR_RETURN(int folded, fold_constant_nodes(g, ctx));
    int inlined = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) inlined += inline_constant_if(g, i);
    changes += folded + inlined;
    if (!inlined) return changes;
  }
}

}  // namespace ferry::passes
