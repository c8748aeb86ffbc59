// Transpose: permutes dims (default: reversed).
#include <numeric>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<std::vector<int64_t>> perm_of(const ir::Node& n, int64_t rank) {
  std::vector<int64_t> perm;
  if (!n.has_attr("perm")) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  perm = n.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank)
    return Status::invalid("perm " + dims_to_string(perm) + " does not match rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    if (p < -rank || p >= rank || seen[p < 0 ? p + rank : p])
      return Status::invalid("perm " + dims_to_string(n.attr_ints("perm")) + " is not a permutation");
    if (p < 0) p += rank;
    seen[p] = true;
  }
  return perm;
}

Status transpose_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> perm, perm_of(ctx.node(), x->rank()));
  std::vector<int64_t> in_strides = strides_of(x->dims());
  std::vector<int64_t> dims(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = x->dims()[perm[i]];
    strides[i] = in_strides[perm[i]];
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  strided_copy(x->raw(), 0, strides, out->raw(), dims, dtype_size(x->dtype()));
  return Status();
}

Status transpose_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> perm, perm_of(ctx.node(), static_cast<int64_t>((*in)->size())));
  Shape out;
  for (int64_t p : perm) out.push_back((**in)[p]);
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_transpose(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Transpose", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = transpose_infer, .kernel = transpose_kernel});
}

}  // namespace ferry::ops
