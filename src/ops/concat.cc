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
  const Tensor& first = *xs[0];
  if (!ctx.node().has_attr("axis")) return Status::invalid("Concat needs the 'axis' attribute");
  const int64_t rank = first.rank();
  if (rank == 0) return Status::invalid("Concat cannot join 0-d tensors");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), rank));
  std::vector<int64_t> dims = first.dims();
  dims[axis] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& x = *xs[k];
    if (x.dtype() != first.dtype())
      return Status::invalid("input " + std::to_string(k) + " is " + dtype_str(x.dtype()) + ", input 0 is " +
                             dtype_str(first.dtype()));
    if (x.rank() != rank)
      return Status::invalid("input " + std::to_string(k) + " " + x.describe() + " has a different rank than input 0 " +
                             first.describe());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && x.dims()[d] != first.dims()[d])
        return Status::invalid("input " + std::to_string(k) + " " + x.describe() + " does not match input 0 " +
                               first.describe() + " outside axis " + std::to_string(axis));
    dims[axis] += x.dims()[axis];
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, first.dtype(), dims));
  const size_t es = dtype_size(first.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  auto* dst = static_cast<uint8_t*>(out->raw());
  const int64_t out_row = dims[axis] * inner;
  int64_t col = 0;
  for (const Tensor* x : xs) {
    const int64_t row = x->dims()[axis] * inner;
    const auto* src = static_cast<const uint8_t*>(x->raw());
    for (int64_t o = 0; o < outer; ++o) copy_elems(dst + (o * out_row + col) * es, src + o * row * es, row, es);
    col += row;
  }
  return Status();
}

Status concat_infer(InferContext& ctx) {
  DType dt = DType::kUndefined;
  int rank = -1;
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    if (dt == DType::kUndefined) dt = ctx.input_dtype(i);
    if (rank < 0) rank = ctx.input_rank(i);
  }
  if (rank <= 0) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), rank));
  Shape out = unknown_dims(rank);
  int64_t total = 0;
  bool total_known = true;
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    const std::optional<Shape>* s = ctx.input_shape(i);
    if (!s || !*s) {
      total_known = false;
      continue;
    }
    if (static_cast<int>((*s)->size()) != rank)
      return Status::invalid("Concat inputs have different ranks (" + std::to_string(rank) + " and " +
                             std::to_string((*s)->size()) + ")");
    for (int d = 0; d < rank; ++d) {
      const Dim& v = (**s)[d];
      if (d == axis) {
        if (v.is_static()) total += v.value;
        else total_known = false;
      } else if (!out[d].is_static() && (v.is_static() || out[d].symbol.empty())) {
        out[d] = v;
      } else if (out[d].is_static() && v.is_static() && out[d].value != v.value) {
        return Status::invalid("Concat inputs differ in dim " + std::to_string(d) + " (" + out[d].to_string() +
                               " vs " + v.to_string() + ")");
      }
    }
  }
  out[axis] = total_known ? Dim(total) : Dim();
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_concat(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Concat", .since_version = 4, .min_inputs = 1, .infer = concat_infer,
                 .kernel = concat_kernel});
}

}  // namespace ferry::ops
