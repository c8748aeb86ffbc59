// SoftmaxCrossEntropyLoss: the negative log-likelihood of log_softmax(scores) over axis 1.
// scores [N, C, D1, ...], labels [N, D1, ...], optional weights [C]; attributes reduction (default mean)
// and ignore_index; optional second output log_prob (the log-softmax, shaped like scores).
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ops/op.h"
#include "ops/util/reduce_loss.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

Status sce_kernel(KernelContext& ctx) {
  const std::string op = "SoftmaxCrossEntropyLoss";
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return Status::invalid(op + " needs a labels input");
  if (x.rank() < 2) return Status::invalid(op + " needs scores of rank >= 2, got " + x.describe());
  if (!is_floating(x.dtype())) return Status::unsupported(op + ": unsupported dtype " + x.describe());
  std::vector<double> lp = x.to_double_vector();
  const AxisSplit s = split_at_axis(x.dims(), 1);
  for (int64_t b = 0; b < s.outer; ++b) {
    for (int64_t i = 0; i < s.inner; ++i) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t k = 0; k < s.n; ++k) mx = std::max(mx, lp[s.at(b, k, i)]);
      for (int64_t k = 0; k < s.n; ++k) sum += std::exp(lp[s.at(b, k, i)] - mx);
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < s.n; ++k) lp[s.at(b, k, i)] -= mx + log_sum;
    }
  }
  std::optional<int64_t> ignore_index;
  if (ctx.node().has_attr("ignore_index")) ignore_index = ctx.node().attr_int("ignore_index", 0);
  FERRY_ASSIGN_OR_RETURN(Tensor loss, nll_loss(op, lp, x.dims(), ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr,
                                               ignore_index, ctx.node().attr_string("reduction", "mean"), x.dtype()));
  ctx.set_output(0, std::move(loss));
  if (ctx.wants_output(1)) {
    FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(1, x.dtype(), x.dims()));
    dispatch_floating(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (size_t i = 0; i < lp.size(); ++i) out->data<T>()[i] = from_double<T>(lp[i]);
    });
  }
  return Status();
}

Status sce_infer(InferContext& ctx) {
  std::optional<Shape> out;
  if (ctx.node().attr_string("reduction", "mean") != "none") out = Shape{};
  else if (const std::optional<Shape>* t = ctx.input_shape(1)) out = *t;
  ctx.set_output(0, ctx.input_dtype(0), out);
  set_output_like_input(ctx, 1, ctx.input_dtype(0));
  return Status();
}

}  // namespace

void register_softmax_cross_entropy_loss(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "SoftmaxCrossEntropyLoss",
      .since_version = 12,
      .min_inputs = 2,
      .max_inputs = 3,
      .infer = sce_infer,
      .kernel = sce_kernel,
  });
}

}  // namespace ferry::ops
