// ConcatFromSequence (opset 11+): concatenates a sequence's tensors along `axis`, or stacks them along
// a new axis when new_axis=1 (then axis may also be rank, i.e. -1 appends a trailing axis).
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status concat_from_sequence_kernel(KernelContext& ctx) {
  const RtValue* seq = ctx.input_value(0);
  if (!seq || !seq->is_sequence()) return Status::invalid("ConcatFromSequence input must be a sequence");
  if (seq->sequence.empty()) return Status::invalid("ConcatFromSequence of an empty sequence");
  if (!ctx.node().has_attr("axis")) return Status::invalid("ConcatFromSequence requires the 'axis' attribute");
  const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
  const int rank = seq->sequence[0].rank();
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), rank + (new_axis ? 1 : 0)));
  Result<Tensor> out = new_axis ? stack_along(seq->sequence, static_cast<int>(axis))
                                : concat_along(seq->sequence, static_cast<int>(axis));
  if (!out.ok()) return out.status();
  ctx.set_output(0, std::move(out).value());
  return Status();
}

}  // namespace

void register_concat_from_sequence(OpRegistry& r) {
  r.add(OpSchema{.op_type = "ConcatFromSequence", .since_version = 11, .min_inputs = 1, .max_inputs = 1,
                 .infer = [](InferContext& ctx) {
                   ctx.set_output_kind(0, ir::ValueKind::kTensor);
                   ctx.set_output_dtype(0, ctx.input_dtype(0));
                   return Status();
                 },
                 .kernel = concat_from_sequence_kernel});
}

}  // namespace ferry::ops
