// Identity: output = input (tensors, sequences and optionals alike).
#include "ops/op.h"
#include "ops/util/broadcast.h"

namespace ferry::ops {

void register_identity(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Identity",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer =
          [](InferContext& ctx) {
            if (const ir::Value* v = ctx.input(0)) ctx.set_output_kind(0, v->kind);
            return infer_same_as_input(ctx);
          },
      .kernel =
          [](KernelContext& ctx) {
            ctx.set_output_value(0, *ctx.input_value(0));
            return Status();
          },
  });
}

}  // namespace ferry::ops
