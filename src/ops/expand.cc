// Expand (bidirectional numpy broadcast to a shape) and Tile (repeat along each axis).
#include <algorithm>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Status expand_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* s, tensor_input(ctx, 1, "shape"));
  if (s->rank() != 1) return Status::invalid("shape must be 1-D, got " + s->describe());
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_values(*s, "shape"));
  for (int64_t d : shape)
    if (d < 0) return Status::invalid("shape " + dims_to_string(shape) + " has a negative dim");
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(x->dims(), shape));
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  strided_copy(x->raw(), 0, broadcast_strides(x->dims(), dims), out->raw(), dims, dtype_size(x->dtype()));
  return Status();
}

Status expand_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  auto shape = known_ints(ctx, 1);
  if (!shape && in && *in) {
    if (auto entries = known_shape_entries(ctx, 1)) {
      Shape target;
      for (const ShapeEntry& e : *entries) target.push_back(e.dim);
      ctx.set_output(0, dt, broadcast_shapes(**in, target));
      return Status();
    }
  }
  if (!shape || !in || !*in) {
    // The shape's length alone gives the rank.
    const std::optional<Shape>* ss = ctx.input_shape(1);
    std::optional<Shape> out;
    if (in && *in && ss && *ss && (*ss)->size() == 1 && (**ss)[0].is_static())
      out = unknown_dims(std::max<int64_t>(static_cast<int64_t>((*in)->size()), (**ss)[0].value));
    ctx.set_output(0, dt, out);
    return Status();
  }
  if (is_static(**in)) {
    FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(static_dims(**in), *shape));
    ctx.set_output(0, dt, to_shape(dims));
    return Status();
  }
  ctx.set_output(0, dt, broadcast_shapes(**in, to_shape(*shape)));
  return Status();
}

Status tile_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* rt, tensor_input(ctx, 1, "repeats"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> reps, int_values(*rt, "repeats"));
  const int r = x->rank();
  if (static_cast<int>(reps.size()) != r)
    return Status::invalid("repeats " + dims_to_string(reps) + " must have one entry per dim of " + x->describe());
  std::vector<int64_t> dims(r);
  for (int d = 0; d < r; ++d) {
    if (reps[d] < 0) return Status::invalid("repeats " + dims_to_string(reps) + " has a negative entry");
    FERRY_ASSIGN_OR_RETURN(dims[d], checked_numel({x->dims()[d], reps[d]}));
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  if (out->numel() == 0) return Status();
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  if (r == 0) {
    std::memcpy(dst, src, es);
    return Status();
  }
  // Row by row over all but the last dim: the source row is found by taking each index modulo the input
  // dim; the row itself is the input's last dim repeated.
  const std::vector<int64_t> xst = strides_of(x->dims());
  const int64_t in_last = x->dims()[r - 1];
  const int64_t rows = out->numel() / dims[r - 1];
  std::vector<int64_t> pos(r - 1, 0);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = 0;
    for (int d = 0; d < r - 1; ++d) off += (pos[d] % x->dims()[d]) * xst[d];
    for (int64_t k = 0; k < reps[r - 1]; ++k) {
      copy_elems(dst, src + off * es, in_last, es);
      dst += in_last * es;
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++pos[d] < dims[d]) break;
      pos[d] = 0;
    }
  }
  return Status();
}

Status tile_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  auto reps = known_ints(ctx, 1);
  const Shape& s = **in;
  if (!reps) {
    ctx.set_output(0, dt, unknown_dims(s.size()));
    return Status();
  }
  if (reps->size() != s.size())
    return Status::invalid("repeats " + dims_to_string(*reps) + " must have one entry per dim of " + shape_to_string(s));
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    if ((*reps)[d] == 1) out.push_back(s[d]);
    else if (auto n = checked_numel({s[d].value, (*reps)[d]}); s[d].is_static() && n.ok()) out.emplace_back(*n);
    else out.emplace_back();
  }
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_expand(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Expand", .since_version = 8, .min_inputs = 2, .max_inputs = 2,
                 .infer = expand_infer, .kernel = expand_kernel});
  r.add(OpSchema{.op_type = "Tile", .since_version = 6, .min_inputs = 2, .max_inputs = 2,
                 .infer = tile_infer, .kernel = tile_kernel});
}

}  // namespace ferry::ops
