// Loop (opset 1+): `for (i = 0; i < M && cond; ++i) { cond, carried..., scans... = body(i, cond,
// carried...) }`. M and cond are optional inputs. Carried values may be tensors, sequences or optionals
// (opset 13/16); scan outputs are the per-iteration tensors stacked along a new leading axis.
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

// Without M and without a condition that ever turns false, ONNX's loop never ends; cap it so a bad
// model is an error instead of a hang.
constexpr int64_t kMaxUnboundedIterations = int64_t{1} << 31;

Result<bool> truth(const RtValue& v, const char* what) {
  if (!v.is_tensor() || v.tensor.numel() != 1)
    return Status::invalid(std::string(what) + " must be a one-element tensor");
  return v.tensor.as_double(0) != 0;
}

Status loop_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node().attr_graph("body");
  if (!body) return Status::invalid("Loop requires the 'body' graph attribute");
  if (!ctx.runner()) return Status::internal("Loop needs a subgraph runner");
  const int n_carried = std::max(0, ctx.num_inputs() - 2);
  if (body->inputs.size() != static_cast<size_t>(n_carried + 2))
    return Status::invalid("Loop body takes " + std::to_string(body->inputs.size()) + " inputs, expected " +
                           std::to_string(n_carried + 2));
  const int n_scan = static_cast<int>(body->outputs.size()) - 1 - n_carried;
  if (n_scan < 0) return Status::invalid("Loop body has too few outputs");

  int64_t max_trip = -1;
  if (ctx.has_input(0)) {
    FERRY_ASSIGN_OR_RETURN(max_trip, scalar_int(ctx.input(0), "Loop trip count M"));
    if (max_trip < 0) max_trip = 0;
  }
  bool cond = true;
  if (ctx.has_input(1)) {
    FERRY_ASSIGN_OR_RETURN(cond, truth(*ctx.input_value(1), "Loop condition"));
  }

  std::vector<RtValue> carried;
  for (int i = 0; i < n_carried; ++i) {
    const RtValue* v = ctx.input_value(2 + i);
    carried.push_back(v ? *v : RtValue::none());
  }
  std::vector<std::vector<Tensor>> scans(n_scan);
  int64_t it = 0;
  for (; cond && (max_trip < 0 || it < max_trip); ++it) {
    if (max_trip < 0 && it >= kMaxUnboundedIterations)
      return Status::invalid("Loop without a trip count ran past " + std::to_string(kMaxUnboundedIterations) +
                             " iterations");
    std::vector<RtValue> feeds;
    feeds.emplace_back(Tensor::scalar<int64_t>(it));
    feeds.emplace_back(Tensor::scalar<bool>(cond));
    for (const RtValue& c : carried) feeds.push_back(c);
    FERRY_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runner()->run(*body, std::move(feeds)));
    FERRY_ASSIGN_OR_RETURN(cond, truth(outs[0], "Loop body condition output"));
    for (int i = 0; i < n_carried; ++i) carried[i] = std::move(outs[1 + i]);
    for (int k = 0; k < n_scan; ++k) {
      RtValue& s = outs[1 + n_carried + k];
      if (!s.is_tensor()) return Status::invalid("Loop scan output " + std::to_string(k) + " must be a tensor");
      if (!scans[k].empty() && scans[k][0].dims() != s.tensor.dims())
        return Status::invalid("Loop scan output " + std::to_string(k) + " changed shape from " +
                               scans[k][0].describe() + " to " + s.tensor.describe());
      scans[k].push_back(std::move(s.tensor));
    }
  }
  for (int i = 0; i < n_carried && i < ctx.num_outputs(); ++i) ctx.set_output_value(i, std::move(carried[i]));
  for (int k = 0; k < n_scan && n_carried + k < ctx.num_outputs(); ++k) {
    if (scans[k].empty()) {
      // Zero iterations: an empty stack; trailing dims come from the body's declared shape when static.
      const ir::Value* o = body->outputs[1 + n_carried + k];
      std::vector<int64_t> dims{0};
      if (o->shape && is_static(*o->shape))
        for (int64_t d : static_dims(*o->shape)) dims.push_back(d);
      DType dt = o->dtype != DType::kUndefined ? o->dtype : DType::kFloat32;
      FERRY_ASSIGN_OR_RETURN(Tensor empty, Tensor::create(dt, dims));
      ctx.set_output(n_carried + k, std::move(empty));
      continue;
    }
    FERRY_ASSIGN_OR_RETURN(Tensor stacked, stack_along(scans[k], 0));
    ctx.set_output(n_carried + k, std::move(stacked));
  }
  return Status();
}

Status loop_infer(InferContext& ctx) {
  ir::Graph* body = mutable_subgraph(ctx.node(), "body");
  if (!body) return Status();
  const int n_carried = std::max(0, ctx.node().num_inputs() - 2);
  if (body->inputs.size() >= 2) {
    seed_value_type(*body->inputs[0], ir::ValueKind::kTensor, DType::kInt64, Shape{});
    seed_value_type(*body->inputs[1], ir::ValueKind::kTensor, DType::kBool, Shape{});
  }
  for (int i = 0; i < n_carried && 2 + i < static_cast<int>(body->inputs.size()); ++i) {
    const ir::Value* in = ctx.input(2 + i);
    // Shapes of carried values may change between iterations, so only kind and dtype are seeded.
    if (in) seed_value_type(*body->inputs[2 + i], in->kind, in->dtype, std::nullopt);
  }
  FERRY_RETURN_IF_ERROR(infer_graph(*body));
  for (int i = 0; i < ctx.node().num_outputs(); ++i) {
    if (1 + i >= static_cast<int>(body->outputs.size())) break;
    const ir::Value* o = body->outputs[1 + i];
    if (i < n_carried) {
      const ir::Value* init = ctx.input(2 + i);
      ir::ValueKind kind = o->kind != ir::ValueKind::kTensor ? o->kind : (init ? init->kind : o->kind);
      if (kind != ir::ValueKind::kTensor) ctx.set_output_kind(i, kind);
      DType dt = o->dtype != DType::kUndefined ? o->dtype : (init ? init->dtype : DType::kUndefined);
      std::optional<Shape> shape;
      if (kind == ir::ValueKind::kTensor && init && init->shape && o->shape && *init->shape == *o->shape)
        shape = o->shape;
      ctx.set_output(i, dt, shape);
    } else {
      std::optional<Shape> shape;
      if (o->shape) {
        shape = Shape{Dim()};
        shape->insert(shape->end(), o->shape->begin(), o->shape->end());
      }
      ctx.set_output(i, o->dtype, shape);
    }
  }
  return Status();
}

}  // namespace

void register_loop(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Loop", .since_version = 1, .min_inputs = 2, .infer = loop_infer, .kernel = loop_kernel});
}

}  // namespace ferry::ops
