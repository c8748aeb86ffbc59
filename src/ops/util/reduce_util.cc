#include "ops/util/reduce_util.h"

#include <string>

#include "ops/util/broadcast.h"

namespace ferry::ops {

AxisSplit split_at_axis(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d < axis) s.outer *= dims[d];
    else if (d == axis) s.n = dims[d];
    else s.inner *= dims[d];
  }
  return s;
}

AxisSplit split_2d(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d < axis) s.outer *= dims[d];
    else s.n *= dims[d];
  }
  return s;
}

Result<std::vector<bool>> axes_to_mask(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    FERRY_ASSIGN_OR_RETURN(int64_t n, normalize_axis(a, rank));
    if (mask[n]) return Status::invalid("axis " + std::to_string(a) + " is repeated in axes");
    mask[n] = true;
  }
  return mask;
}

std::vector<int64_t> reduced_dims(const std::vector<int64_t>& dims, const std::vector<bool>& mask, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!mask[d]) out.push_back(dims[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d]) out.push_back(shape[d]);
    else if (keepdims) out.emplace_back(1);
  }
  return out;
}

Result<int64_t> axis_attr(const ir::Node& node, int64_t dflt, int64_t rank) {
  return normalize_axis(node.attr_int("axis", dflt), rank);
}

Result<std::vector<double>> expand_trailing(const Tensor& param, const std::vector<int64_t>& x_dims,
                                            const std::string& what) {
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  if (param.rank() > rank)
    return Status::invalid(what + " " + param.describe() + " has a higher rank than the input " +
                           dims_to_string(x_dims));
  std::vector<int64_t> tail(x_dims.end() - param.rank(), x_dims.end());
  for (int d = 0; d < param.rank(); ++d) {
    if (param.dims()[d] != 1 && param.dims()[d] != tail[d])
      return Status::invalid(what + " " + param.describe() + " does not broadcast to the input " +
                             dims_to_string(x_dims));
  }
  FERRY_ASSIGN_OR_RETURN(int64_t n, checked_numel(tail));
  std::vector<double> values = param.to_double_vector();
  std::vector<double> out(static_cast<size_t>(n));
  for_each_broadcast(tail, tail, param.dims(), [&](int64_t o, int64_t, int64_t ip) { out[o] = values[ip]; });
  return out;
}

void set_output_like_input(InferContext& ctx, int out, DType dtype) {
  const std::optional<Shape>* s = ctx.input_shape(0);
  ctx.set_output(out, dtype, s ? *s : std::nullopt);
}

}  // namespace ferry::ops
