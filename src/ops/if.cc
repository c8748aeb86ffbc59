// If (opset 1+): runs then_branch or else_branch (neither takes inputs; both read the outer scope) and
// returns that branch's outputs. Branch outputs may be tensors, sequences or optionals (opset 13/16).
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status if_kernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input_value(0)->is_tensor()) return Status::invalid("If needs a tensor condition");
  const Tensor& cond = ctx.input(0);
  if (cond.numel() != 1) return Status::invalid("If condition must hold one element, got " + cond.describe());
  const bool take_then = cond.as_double(0) != 0;
  const char* which = take_then ? "then_branch" : "else_branch";
  const ir::Graph* branch = ctx.node().attr_graph(which);
  if (!branch) return Status::invalid(std::string("If requires the '") + which + "' graph attribute");
  if (!ctx.runner()) return Status::internal("If needs a subgraph runner");
  FERRY_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runner()->run(*branch, {}));
  if (static_cast<int>(outs.size()) < ctx.num_outputs())
    return Status::invalid(std::string("If ") + which + " produced " + std::to_string(outs.size()) +
                           " outputs, the node has " + std::to_string(ctx.num_outputs()));
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_value(i, std::move(outs[i]));
  return Status();
}

// The shape both branches agree on: equal dims stay, differing dims become unknown.
std::optional<Shape> merge_shapes(const std::optional<Shape>& a, const std::optional<Shape>& b) {
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  Shape s = *a;
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == (*b)[i])) s[i] = Dim();
  return s;
}

Status if_infer(InferContext& ctx) {
  ir::Graph* then_g = mutable_subgraph(ctx.node(), "then_branch");
  ir::Graph* else_g = mutable_subgraph(ctx.node(), "else_branch");
  // A branch whose inference finds a contradiction is not an error of the model: models guard
  // shape-specific branches with a condition on those very shapes (e.g. AffineGrid's 2-D/3-D
  // branches), so the branch may never run. Its outputs then keep what the model declared, and
  // the kernel reports the problem if the branch is ever taken.
  if (then_g) (void)infer_graph(*then_g);
  if (else_g) (void)infer_graph(*else_g);
  for (int i = 0; i < ctx.node().num_outputs(); ++i) {
    const ir::Value* t = then_g && i < static_cast<int>(then_g->outputs.size()) ? then_g->outputs[i] : nullptr;
    const ir::Value* e = else_g && i < static_cast<int>(else_g->outputs.size()) ? else_g->outputs[i] : nullptr;
    const ir::Value* primary = t ? t : e;
    if (!primary) continue;
    ir::ValueKind kind = primary->kind;
    if (t && e && t->kind != e->kind) kind = ir::ValueKind::kOptional;  // e.g. empty optional vs value
    if (kind != ir::ValueKind::kTensor) ctx.set_output_kind(i, kind);
    DType dt = primary->dtype != DType::kUndefined ? primary->dtype : (e ? e->dtype : DType::kUndefined);
    std::optional<Shape> shape;
    if (kind == ir::ValueKind::kTensor) shape = (t && e) ? merge_shapes(t->shape, e->shape) : primary->shape;
    ctx.set_output(i, dt, shape);
  }
  return Status();
}

}  // namespace

void register_if(OpRegistry& r) {
  r.add(OpSchema{.op_type = "If", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = if_infer, .kernel = if_kernel});
}

}  // namespace ferry::ops
