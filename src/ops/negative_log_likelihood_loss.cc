// NegativeLogLikelihoodLoss: input [N, C, D1, ...] of log-probabilities, target [N, D1, ...], optional
// weight [C]; attributes reduction (none | sum | mean, default mean) and ignore_index.
#include <optional>
#include <string>

#include "ops/op.h"
#include "ops/util/reduce_loss.h"

namespace ferry::ops {
namespace {

std::optional<int64_t> ignore_index_of(const ir::Node& node) {
  if (!node.has_attr("ignore_index")) return std::nullopt;
  return node.attr_int("ignore_index", 0);
}

Status nll_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return Status::invalid("NegativeLogLikelihoodLoss needs a target input");
  FERRY_ASSIGN_OR_RETURN(
      Tensor loss, nll_loss("NegativeLogLikelihoodLoss", x.to_double_vector(), x.dims(), ctx.input(1),
                            ctx.has_input(2) ? &ctx.input(2) : nullptr, ignore_index_of(ctx.node()),
                            ctx.node().attr_string("reduction", "mean"), x.dtype()));
  ctx.set_output(0, std::move(loss));
  return Status();
}

Status nll_infer(InferContext& ctx) {
  std::optional<Shape> out;
  if (ctx.node().attr_string("reduction", "mean") != "none") out = Shape{};
  else if (const std::optional<Shape>* t = ctx.input_shape(1)) out = *t;
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}

}  // namespace

void register_negative_log_likelihood_loss(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "NegativeLogLikelihoodLoss",
      .since_version = 12,
      .min_inputs = 2,
      .max_inputs = 3,
      .infer = nll_infer,
      .kernel = nll_kernel,
  });
}

}  // namespace ferry::ops
