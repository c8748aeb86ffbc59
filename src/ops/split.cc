// Split: cuts a tensor along `axis` into the node's outputs. Sizes come from the `split` attribute
// (before opset 13) or input (13+); without them the axis is cut evenly, and from opset 18 `num_outputs`
// allows an uneven last chunk (ceil-sized chunks).
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<std::vector<int64_t>> split_sizes(const ir::Node& node, int64_t dim, const std::optional<std::vector<int64_t>>& given,
                                         int n_outputs) {
  if (given) {
    if (static_cast<int>(given->size()) != n_outputs)
      return Status::invalid("split " + dims_to_string(*given) + " has " + std::to_string(given->size()) +
                             " entries for " + std::to_string(n_outputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *given) {
      if (s < 0 || s > dim)  // bounding each entry also keeps the sum from overflowing
        return Status::invalid("split " + dims_to_string(*given) + " has a size outside [0, " + std::to_string(dim) + "]");
      sum += s;
    }
    if (sum != dim)
      return Status::invalid("split " + dims_to_string(*given) + " sums to " + std::to_string(sum) +
                             ", not the axis size " + std::to_string(dim));
    return *given;
  }
  int64_t n = n_outputs;
  if (node.opset >= 18 && node.has_attr("num_outputs")) {
    n = node.attr_int("num_outputs", n_outputs);
    if (n != n_outputs)
      return Status::invalid("num_outputs " + std::to_string(n) + " does not match the node's " +
                             std::to_string(n_outputs) + " outputs");
  }
  if (n <= 0) return Status::invalid("Split needs at least one output");
  std::vector<int64_t> sizes(n, dim / n);
  if (dim % n != 0) {
    const bool uneven_ok = node.opset >= 18;
    if (!uneven_ok)
      return Status::invalid("axis size " + std::to_string(dim) + " cannot be split evenly into " +
                             std::to_string(n) + " outputs");
    int64_t chunk = dim / n + 1;
    sizes.assign(n, chunk);
    sizes.back() = dim - chunk * (n - 1);
    if (sizes.back() < 0)
      return Status::invalid("axis size " + std::to_string(dim) + " cannot be split into " + std::to_string(n) +
                             " chunks of " + std::to_string(chunk));
  }
  return sizes;
}

Status split_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  if (x->rank() == 0) return Status::invalid("Split cannot split a 0-d tensor");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), x->rank()));
  std::optional<std::vector<int64_t>> given;
  if (ctx.opset() < 13) {
    if (ctx.node().has_attr("split")) given = ctx.node().attr_ints("split");
  } else if (has_tensor_input(ctx, 1)) {
    FERRY_ASSIGN_OR_RETURN(given, int_values(ctx.input(1), "split"));
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                         split_sizes(ctx.node(), x->dims()[axis], given, ctx.num_outputs()));
  const size_t es = dtype_size(x->dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x->dims()[d];
  for (int64_t d = axis + 1; d < x->rank(); ++d) inner *= x->dims()[d];
  const int64_t in_row = x->dims()[axis] * inner;
  const auto* src = static_cast<const uint8_t*>(x->raw());
  int64_t col = 0;
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    std::vector<int64_t> dims = x->dims();
    dims[axis] = sizes[k];
    const int64_t row = sizes[k] * inner;
    if (ctx.wants_output(k)) {
      FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(k, x->dtype(), dims));
      auto* dst = static_cast<uint8_t*>(out->raw());
      for (int64_t o = 0; o < outer; ++o) copy_elems(dst + o * row * es, src + (o * in_row + col) * es, row, es);
    }
    col += row;
  }
  return Status();
}

Status split_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const int n_out = ctx.node().num_outputs();
  for (int k = 0; k < n_out; ++k) ctx.set_output_dtype(k, dt);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in || (*in)->empty()) return Status();
  const Shape& s = **in;
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), s.size()));
  std::optional<std::vector<int64_t>> given;
  bool known = true;
  if (ctx.opset() < 13) {
    if (ctx.node().has_attr("split")) given = ctx.node().attr_ints("split");
  } else if (ctx.has_input(1)) {
    given = known_ints(ctx, 1);
    known = given.has_value();
  }
  std::optional<std::vector<int64_t>> sizes;
  if (given && known) {
    sizes = given;
  } else if (known && s[axis].is_static()) {
    FERRY_ASSIGN_OR_RETURN(sizes, split_sizes(ctx.node(), s[axis].value, std::nullopt, n_out));
  }
  for (int k = 0; k < n_out; ++k) {
    Shape o = s;
    o[axis] = sizes && k < static_cast<int>(sizes->size()) ? Dim((*sizes)[k]) : Dim();
    ctx.set_output(k, dt, o);
  }
  return Status();
}
}  // namespace

void register_split(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Split", .since_version = 2, .min_inputs = 1, .max_inputs = 2,
                 .infer = split_infer, .kernel = split_kernel});
}

}  // namespace ferry::ops
