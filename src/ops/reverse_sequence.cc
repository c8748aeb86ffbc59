// ReverseSequence: for each batch entry b, reverse the first sequence_lens[b] steps along the time axis.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Status reverse_sequence_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* sl, tensor_input(ctx, 1, "sequence_lens"));
  if (x->rank() < 2) return Status::invalid("input must have rank >= 2, got " + x->describe());
  const int64_t batch_axis = ctx.node().attr_int("batch_axis", 1);
  const int64_t time_axis = ctx.node().attr_int("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return Status::invalid("batch_axis and time_axis must be 0 and 1 in some order, got " +
                           std::to_string(batch_axis) + " and " + std::to_string(time_axis));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> lens, int_values(*sl, "sequence_lens"));
  const int64_t B = x->dims()[batch_axis], T = x->dims()[time_axis];
  if (sl->rank() != 1 || static_cast<int64_t>(lens.size()) != B)
    return Status::invalid("sequence_lens " + sl->describe() + " must be 1-D with one entry per batch (" +
                           std::to_string(B) + ")");
  for (size_t i = 0; i < lens.size(); ++i)
    if (lens[i] < 0 || lens[i] > T)
      return Status::invalid("sequence_lens[" + std::to_string(i) + "] = " + std::to_string(lens[i]) +
                             " is outside [0, " + std::to_string(T) + "]");
  int64_t inner = 1;
  for (int d = 2; d < x->rank(); ++d) inner *= x->dims()[d];
  Tensor out = x->clone();
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  auto offset = [&](int64_t t, int64_t b) { return (time_axis == 0 ? t * B + b : b * T + t) * inner; };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lens[b]; ++t)
      copy_elems(dst + offset(t, b) * es, src + offset(lens[b] - 1 - t, b) * es, inner, es);
  ctx.set_output(0, std::move(out));
  return Status();
}
}  // namespace

void register_reverse_sequence(OpRegistry& r) {
  r.add(OpSchema{.op_type = "ReverseSequence", .since_version = 10, .min_inputs = 2, .max_inputs = 2,
                 .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
                 .kernel = reverse_sequence_kernel});
}

}  // namespace ferry::ops
