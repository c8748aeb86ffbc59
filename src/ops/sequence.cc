// Sequence basics: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
// SequenceLength (opset 11+). Sequences are RtValues of kind kSequence holding tensors.
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Result<const RtValue*> sequence_input(const KernelContext& ctx, int i) {
  const RtValue* v = ctx.input_value(i);
  if (!v || !v->is_sequence()) return Status::invalid("input " + std::to_string(i) + " must be a sequence");
  return v;
}

// Position input `i` (optional) normalised against `n`; `allow_end` admits n itself (insert at back).
Result<int64_t> position_input(const KernelContext& ctx, int i, int64_t n, int64_t dflt, bool allow_end) {
  if (!ctx.has_input(i)) return dflt;
  FERRY_ASSIGN_OR_RETURN(int64_t pos, scalar_int(ctx.input(i), "position"));
  const int64_t hi = allow_end ? n : n - 1;
  if (pos < -n || pos > hi)
    return Status::invalid("position " + std::to_string(pos) + " is out of range for a sequence of length " +
                           std::to_string(n));
  return pos < 0 ? pos + n : pos;
}

void set_sequence_output(InferContext& ctx, DType elem) {
  ctx.set_output_kind(0, ir::ValueKind::kSequence);
  ctx.set_output_dtype(0, elem);
}

Status seq_empty_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(DType dt, dtype_from_onnx(ctx.node().attr_int("dtype", 1)));
  ctx.set_output_value(0, RtValue::make_sequence({}, dt));
  return Status();
}

Status seq_construct_kernel(KernelContext& ctx) {
  std::vector<Tensor> items;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const RtValue* v = ctx.input_value(i);
    if (!v || !v->is_tensor()) return Status::invalid("SequenceConstruct input " + std::to_string(i) + " must be a tensor");
    if (!items.empty() && v->tensor.dtype() != items[0].dtype())
      return Status::invalid("SequenceConstruct inputs must share one dtype");
    items.push_back(v->tensor);
  }
  DType dt = items.empty() ? DType::kUndefined : items[0].dtype();
  ctx.set_output_value(0, RtValue::make_sequence(std::move(items), dt));
  return Status();
}

Status seq_insert_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const RtValue* seq, sequence_input(ctx, 0));
  const RtValue* tv = ctx.input_value(1);
  if (!tv || !tv->is_tensor()) return Status::invalid("SequenceInsert input 1 must be a tensor");
  if (!seq->sequence.empty() && seq->sequence[0].dtype() != tv->tensor.dtype())
    return Status::invalid("SequenceInsert: tensor dtype differs from the sequence's elements");
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  FERRY_ASSIGN_OR_RETURN(int64_t pos, position_input(ctx, 2, n, n, true));
  std::vector<Tensor> items = seq->sequence;
  items.insert(items.begin() + pos, tv->tensor);
  ctx.set_output_value(0, RtValue::make_sequence(std::move(items), tv->tensor.dtype()));
  return Status();
}

Status seq_at_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const RtValue* seq, sequence_input(ctx, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (!ctx.has_input(1)) return Status::invalid("SequenceAt needs a position");
  FERRY_ASSIGN_OR_RETURN(int64_t pos, position_input(ctx, 1, n, 0, false));
  ctx.set_output(0, seq->sequence[pos]);
  return Status();
}

Status seq_erase_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const RtValue* seq, sequence_input(ctx, 0));
  const int64_t n = static_cast<int64_t>(seq->sequence.size());
  if (n == 0) return Status::invalid("SequenceErase on an empty sequence");
  FERRY_ASSIGN_OR_RETURN(int64_t pos, position_input(ctx, 1, n, n - 1, false));
  std::vector<Tensor> items = seq->sequence;
  items.erase(items.begin() + pos);
  ctx.set_output_value(0, RtValue::make_sequence(std::move(items), seq->elem_type));
  return Status();
}

Status seq_length_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const RtValue* seq, sequence_input(ctx, 0));
  ctx.set_output(0, Tensor::scalar<int64_t>(static_cast<int64_t>(seq->sequence.size())));
  return Status();
}

}  // namespace

void register_sequence(OpRegistry& r) {
  r.add(OpSchema{.op_type = "SequenceEmpty", .since_version = 11, .min_inputs = 0, .max_inputs = 0,
                 .infer = [](InferContext& ctx) {
                   auto dt = dtype_from_onnx(ctx.node().attr_int("dtype", 1));
                   set_sequence_output(ctx, dt.ok() ? *dt : DType::kUndefined);
                   return Status();
                 },
                 .kernel = seq_empty_kernel});
  r.add(OpSchema{.op_type = "SequenceConstruct", .since_version = 11, .min_inputs = 1,
                 .infer = [](InferContext& ctx) {
                   set_sequence_output(ctx, ctx.input_dtype(0));
                   return Status();
                 },
                 .kernel = seq_construct_kernel});
  r.add(OpSchema{.op_type = "SequenceInsert", .since_version = 11, .min_inputs = 2, .max_inputs = 3,
                 .infer = [](InferContext& ctx) {
                   DType dt = ctx.input_dtype(0) != DType::kUndefined ? ctx.input_dtype(0) : ctx.input_dtype(1);
                   set_sequence_output(ctx, dt);
                   return Status();
                 },
                 .kernel = seq_insert_kernel});
  r.add(OpSchema{.op_type = "SequenceAt", .since_version = 11, .min_inputs = 2, .max_inputs = 2,
                 .infer = [](InferContext& ctx) {
                   ctx.set_output_kind(0, ir::ValueKind::kTensor);
                   ctx.set_output_dtype(0, ctx.input_dtype(0));
                   return Status();
                 },
                 .kernel = seq_at_kernel});
  r.add(OpSchema{.op_type = "SequenceErase", .since_version = 11, .min_inputs = 1, .max_inputs = 2,
                 .infer = [](InferContext& ctx) {
                   set_sequence_output(ctx, ctx.input_dtype(0));
                   return Status();
                 },
                 .kernel = seq_erase_kernel});
  r.add(OpSchema{.op_type = "SequenceLength", .since_version = 11, .min_inputs = 1, .max_inputs = 1,
                 .infer = [](InferContext& ctx) {
                   ctx.set_output(0, DType::kInt64, Shape{});
                   return Status();
                 },
                 .kernel = seq_length_kernel});
}

}  // namespace ferry::ops
