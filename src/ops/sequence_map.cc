// SequenceMap (opset 17+): runs `body` once per element of the input sequence. Additional inputs that
// are sequences are iterated in lockstep (same length required); tensors are passed unchanged to every
// iteration. Each body output is collected into an output sequence.
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status sequence_map_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node().attr_graph("body");
  if (!body) return Status::invalid("SequenceMap requires the 'body' graph attribute");
  if (!ctx.runner()) return Status::internal("SequenceMap needs a subgraph runner");
  const RtValue* seq = ctx.input_value(0);
  if (!seq || !seq->is_sequence()) return Status::invalid("SequenceMap input 0 must be a sequence");
  const size_t n = seq->sequence.size();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const RtValue* v = ctx.input_value(i);
    if (v && v->is_sequence() && v->sequence.size() != n)
      return Status::invalid("SequenceMap: sequence input " + std::to_string(i) + " has length " +
                             std::to_string(v->sequence.size()) + ", expected " + std::to_string(n));
  }
  if (body->inputs.size() != static_cast<size_t>(ctx.num_inputs()))
    return Status::invalid("SequenceMap body takes " + std::to_string(body->inputs.size()) + " inputs, node has " +
                           std::to_string(ctx.num_inputs()));
  std::vector<std::vector<Tensor>> collected(body->outputs.size());
  for (size_t k = 0; k < n; ++k) {
    std::vector<RtValue> feeds;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const RtValue* v = ctx.input_value(i);
      if (!v) feeds.push_back(RtValue::none());
      else if (v->is_sequence()) feeds.emplace_back(v->sequence[k]);
      else feeds.push_back(*v);
    }
    FERRY_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runner()->run(*body, std::move(feeds)));
    for (size_t j = 0; j < outs.size() && j < collected.size(); ++j) {
      if (!outs[j].is_tensor()) return Status::invalid("SequenceMap body output " + std::to_string(j) + " is not a tensor");
      collected[j].push_back(std::move(outs[j].tensor));
    }
  }
  for (size_t j = 0; j < collected.size() && static_cast<int>(j) < ctx.num_outputs(); ++j) {
    DType dt = collected[j].empty() ? body->outputs[j]->dtype : collected[j][0].dtype();
    ctx.set_output_value(static_cast<int>(j), RtValue::make_sequence(std::move(collected[j]), dt));
  }
  return Status();
}

Status sequence_map_infer(InferContext& ctx) {
  ir::Graph* body = mutable_subgraph(ctx.node(), "body");
  if (!body) return Status();
  for (int i = 0; i < ctx.node().num_inputs() && i < static_cast<int>(body->inputs.size()); ++i) {
    const ir::Value* in = ctx.input(i);
    if (!in) continue;
    if (in->kind == ir::ValueKind::kSequence) {
      seed_value_type(*body->inputs[i], ir::ValueKind::kTensor, in->dtype, std::nullopt);
    } else {
      seed_value_type(*body->inputs[i], in->kind, in->dtype, in->shape);
    }
  }
  FERRY_RETURN_IF_ERROR(infer_graph(*body));
  for (int j = 0; j < ctx.node().num_outputs() && j < static_cast<int>(body->outputs.size()); ++j) {
    ctx.set_output_kind(j, ir::ValueKind::kSequence);
    ctx.set_output_dtype(j, body->outputs[j]->dtype);
  }
  return Status();
}

}  // namespace

void register_sequence_map(OpRegistry& r) {
  r.add(OpSchema{.op_type = "SequenceMap", .since_version = 17, .min_inputs = 1,
                 .infer = sequence_map_infer, .kernel = sequence_map_kernel});
}

}  // namespace ferry::ops
