// SplitToSequence (opset 11+): splits a tensor along `axis` into a sequence. `split` may be a scalar
// (chunk length; the last chunk may be shorter) or a 1-D list of lengths; without it every slice has
// length 1 and `keepdims=0` drops the axis.
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status split_to_sequence_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return Status::invalid("SplitToSequence needs an input of rank >= 1");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), x.rank()));
  const int64_t dim = x.dim(static_cast<int>(axis));
  std::vector<int64_t> lengths;
  const bool has_split = ctx.has_input(1);
  if (!has_split) {
    lengths.assign(dim, 1);
  } else {
    const Tensor& split = ctx.input(1);
    if (!is_integer(split.dtype())) return Status::invalid("split must be an integer tensor");
    if (split.rank() == 0) {
      const int64_t len = split.as_int64(0);
      if (len <= 0) return Status::invalid("split length must be positive, got " + std::to_string(len));
      for (int64_t pos = 0; pos < dim; pos += len) lengths.push_back(std::min(len, dim - pos));
    } else if (split.rank() == 1) {
      lengths = split.to_int64_vector();
      int64_t sum = 0;
      for (int64_t l : lengths) {
        if (l < 0) return Status::invalid("split lengths must be non-negative, got " + std::to_string(l));
        sum += l;
      }
      if (sum != dim)
        return Status::invalid("split lengths sum to " + std::to_string(sum) + " but the axis has " +
                               std::to_string(dim));
    } else {
      return Status::invalid("split must be a scalar or 1-D tensor");
    }
  }
  const bool drop_axis = !has_split && ctx.node().attr_int("keepdims", 1) == 0;
  std::vector<Tensor> parts;
  int64_t pos = 0;
  for (int64_t l : lengths) {
    FERRY_ASSIGN_OR_RETURN(Tensor p, slice_along(x, static_cast<int>(axis), pos, l));
    pos += l;
    if (drop_axis) {
      std::vector<int64_t> d = p.dims();
      d.erase(d.begin() + axis);
      FERRY_ASSIGN_OR_RETURN(p, p.reshaped(d));
    }
    parts.push_back(std::move(p));
  }
  ctx.set_output_value(0, RtValue::make_sequence(std::move(parts), x.dtype()));
  return Status();
}

}  // namespace

void register_split_to_sequence(OpRegistry& r) {
  r.add(OpSchema{.op_type = "SplitToSequence", .since_version = 11, .min_inputs = 1, .max_inputs = 2,
                 .infer = [](InferContext& ctx) {
                   ctx.set_output_kind(0, ir::ValueKind::kSequence);
                   ctx.set_output_dtype(0, ctx.input_dtype(0));
                   return Status();
                 },
                 .kernel = split_to_sequence_kernel});
}

}  // namespace ferry::ops
