// com.ferry ChannelShuffle (produced by passes/recognize_channel_shuffle): ShuffleNet's channel shuffle.
// X [N, C, ...] with its channels seen as [groups, C / groups] is transposed to [C / groups, groups]:
//   Y[n, j * groups + g, ...] = X[n, g * (C / groups) + j, ...]
// ONNX exporters write it as Reshape [N, groups, C / groups, ...] -> Transpose (0, 2, 1, 3, ...) ->
// Reshape [N, C, ...]; as one op a backend shuffles in the layout its convolutions use (OpenVINO has the
// same op, ShuffleChannels). The reference kernel is one strided copy.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<int64_t> groups_of(const ir::Node& n) {
  if (!n.has_attr("groups")) return Status::invalid("ChannelShuffle: missing the 'groups' attribute");
  const int64_t g = n.attr_int("groups", 0);
  if (g < 1) return Status::invalid("ChannelShuffle: groups " + std::to_string(g) + " must be at least 1");
  return g;
}

Status check_dims(const std::vector<int64_t>& d, int64_t groups) {
  if (d.size() < 2) return Status::invalid("ChannelShuffle: X must have a channel dim (rank 2 or more), got " + dims_to_string(d));
  if (d[1] % groups != 0)
    return Status::invalid("ChannelShuffle: " + std::to_string(d[1]) + " channels do not split into " +
                           std::to_string(groups) + " groups");
  return Status();
}

Status channel_shuffle_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(int64_t g, groups_of(ctx.node()));
  const std::vector<int64_t>& d = x->dims();
  FERRY_RETURN_IF_ERROR(check_dims(d, g));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), d));
  int64_t inner = 1;
  for (size_t i = 2; i < d.size(); ++i) inner *= d[i];
  const int64_t c = d[1], per_group = c / g;
  // Y as [N, C / groups, groups, inner] (dense) read from X's [N, groups, C / groups, inner].
  strided_copy(x->raw(), 0, {c * inner, inner, per_group * inner, 1}, y->raw(), {d[0], per_group, g, inner},
               dtype_size(x->dtype()));
  return Status();
}

Status channel_shuffle_infer(InferContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(int64_t g, groups_of(ctx.node()));
  const std::optional<Shape>* s = ctx.input_shape(0);
  if (s && *s) {
    if ((*s)->size() < 2)
      return Status::invalid("ChannelShuffle: X must have a channel dim (rank 2 or more)");
    const auto& c = (**s)[1];
    if (c.is_static() && c.value % g != 0)
      return Status::invalid("ChannelShuffle: " + std::to_string(c.value) + " channels do not split into " +
                             std::to_string(g) + " groups");
  }
  ctx.set_output(0, ctx.input_dtype(0), s ? *s : std::nullopt);
  return Status();
}

}  // namespace

void register_channel_shuffle(OpRegistry& r) {
  r.add(OpSchema{.op_type = "ChannelShuffle", .domain = "com.ferry", .since_version = 1, .min_inputs = 1,
                 .max_inputs = 1, .infer = channel_shuffle_infer, .kernel = channel_shuffle_kernel});
}

}  // namespace ferry::ops
