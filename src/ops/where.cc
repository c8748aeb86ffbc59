// Where(condition, x, y): x where condition else y, with numpy broadcasting over all three inputs.
#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

Status where_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* cond, tensor_input(ctx, 0));
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 1));
  FERRY_ASSIGN_OR_RETURN(const Tensor* y, tensor_input(ctx, 2));
  if (cond->dtype() != DType::kBool)
    return Status::invalid("Where: condition must be bool, got " + std::string(dtype_name(cond->dtype())));
  FERRY_RETURN_IF_ERROR(check_same_dtype(ctx, *x, *y, 1, 2));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> xy_dims, broadcast_dims(x->dims(), y->dims()));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(cond->dims(), xy_dims));
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(x->dtype(), dims));
  bool ok = dispatch_in(AllTypes{}, x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* pc = cond->data<bool>();
    const T* px = x->data<T>();
    const T* py = y->data<T>();
    T* po = out.data<T>();
    for_each_broadcast3(dims, cond->dims(), x->dims(), y->dims(),
                        [&](int64_t o, int64_t ic, int64_t ix, int64_t iy) { po[o] = pc[ic] ? px[ix] : py[iy]; });
  });
  if (!ok) return unsupported_dtype(ctx, x->dtype(), 1);
  ctx.set_output(0, std::move(out));
  return Status();
}

Status where_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(1) != DType::kUndefined ? ctx.input_dtype(1) : ctx.input_dtype(2);
  if (dt == DType::kUndefined && ctx.node().has_output(0)) dt = ctx.node().outputs[0]->dtype;
  if (dt == DType::kUndefined) {
    // Shape only: infer with the condition's dtype, then forget that dtype.
    FERRY_RETURN_IF_ERROR(infer_broadcast(ctx));
    if (ctx.node().has_output(0)) ctx.node().outputs[0]->dtype = DType::kUndefined;
    return Status();
  }
  return infer_broadcast(ctx, dt);
}
}  // namespace

void register_where(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Where",
      .since_version = 9,
      .min_inputs = 3,
      .max_inputs = 3,
      .infer = where_infer,
      .kernel = where_kernel,
  });
}

}  // namespace ferry::ops
