// Concat: joins tensors along `axis`; all other dims must match.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Status concat_kernel(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) return Status::invalid("Concat needs at least one input");
  std::vector<const Tensor*> xs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, i, "inputs"));
    xs.push_back(x);
  }
  if (!ctx.node().has_attr("axis")) return Status::invalid("Concat needs the 'axis' attribute");
  const int64_t axis = ctx.node().attr_int("axis", 0);
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, concat_dims(xs, axis));
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, xs[0]->dtype(), dims));
  concat_copy(xs, axis, *out);
  return Status();
}
}  // namespace

void register_concat(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Concat", .since_version = 4, .min_inputs = 1, .infer = infer_concat,
                 .kernel = concat_kernel});
}

}  // namespace ferry::ops
