// MaxUnpool: scatters X into zeros at the flat positions given by I (MaxPool's Indices). The default
// output size is (in - 1) * stride + kernel - pad_begin - pad_end. As in the ONNX reference, indices
// address that default-sized tensor, which is then placed at the origin of a larger output_shape.
#include <cstring>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
Result<std::vector<int64_t>> unpool_default_dims(const ir::Node& node, const std::vector<int64_t>& x_dims) {
  const size_t n = x_dims.size() - 2;
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (strides.empty()) strides.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    return Status::invalid("MaxUnpool: kernel_shape, strides and pads must match the " + std::to_string(n) +
                           " spatial dims");
  std::vector<int64_t> out = {x_dims[0], x_dims[1]};
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] > nn::kMaxWindowAttr || strides[i] > nn::kMaxWindowAttr || pads[i] > nn::kMaxWindowAttr ||
        pads[i + n] > nn::kMaxWindowAttr || pads[i] < 0 || pads[i + n] < 0)
      return Status::invalid("MaxUnpool: kernel_shape, strides and pads must be in [0, " +
                             std::to_string(nn::kMaxWindowAttr) + "]");
    int64_t v = (x_dims[i + 2] - 1) * strides[i] - pads[i] - pads[i + n] + kernel[i];
    if (v <= 0 || kernel[i] <= 0 || strides[i] <= 0)
      return Status::invalid("MaxUnpool: bad kernel_shape/strides/pads for spatial dim " + std::to_string(i));
    out.push_back(v);
  }
  return out;
}

Status max_unpool_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, nn::tensor_in(ctx, 0, "X"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, nn::tensor_in(ctx, 1, "I"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* shape_in, nn::optional_tensor_in(ctx, 2, "output_shape"));
  if (!is_floating(x->dtype())) return nn::bad_dtype(ctx, *x, "X");
  if (ind->dtype() != DType::kInt64) return nn::bad_dtype(ctx, *ind, "I");
  if (x->rank() < 3) return Status::invalid("MaxUnpool: X must have rank >= 3");
  if (ind->dims() != x->dims()) return Status::invalid("MaxUnpool: I " + ind->describe() + " must have X's shape");
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> base, unpool_default_dims(ctx.node(), x->dims()));
  std::vector<int64_t> out_dims = base;
  if (shape_in) {
    out_dims = nn::to_int64s(*shape_in);
    if (out_dims.size() != base.size())
      return Status::invalid("MaxUnpool: output_shape must have " + std::to_string(base.size()) + " values");
    for (size_t i = 0; i < base.size(); ++i)
      if (out_dims[i] < base[i])
        return Status::invalid("MaxUnpool: output_shape " + dims_to_string(out_dims) + " is smaller than " +
                               dims_to_string(base));
  }
  FERRY_ASSIGN_OR_RETURN(int64_t base_numel, checked_numel(base));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x->dtype(), out_dims));
  const size_t elem = dtype_size(x->dtype());
  const int64_t* ip = ind->data<int64_t>();
  const char* xp = static_cast<const char*>(x->raw());
  char* yp = static_cast<char*>(y->raw());
  for (int64_t i = 0; i < x->numel(); ++i) {
    int64_t idx = ip[i];
    if (idx < 0 || idx >= base_numel)
      return Status::invalid("MaxUnpool: index " + std::to_string(idx) + " at position " + std::to_string(i) +
                             " is out of range [0, " + std::to_string(base_numel) + ")");
    // Coordinates in the default-sized tensor -> offset in the (possibly larger) output.
    int64_t off = 0, rem = idx, mul = 1;
    for (int d = static_cast<int>(base.size()) - 1; d >= 0; --d) {
      off += (rem % base[d]) * mul;
      rem /= base[d];
      mul *= out_dims[d];
    }
    std::memcpy(yp + off * elem, xp + i * elem, elem);
  }
  return Status();
}

Status max_unpool_infer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (const Tensor* s = ctx.input_constant(2)) {
    ctx.set_output(0, dt, to_shape(nn::to_int64s(*s)));
    return Status();
  }
  const ir::Value* x = ctx.input(0);
  if (!ctx.has_input(2) && x && x->shape && x->shape->size() >= 3 && is_static(*x->shape)) {
    auto d = unpool_default_dims(ctx.node(), static_dims(*x->shape));
    if (d.ok()) {
      ctx.set_output(0, dt, to_shape(*d));
      return Status();
    }
  }
  ctx.set_output(0, dt, std::nullopt);
  return Status();
}
}  // namespace

void register_max_unpool(OpRegistry& r) {
  r.add(OpSchema{.op_type = "MaxUnpool", .since_version = 9, .min_inputs = 2, .max_inputs = 3,
                 .infer = max_unpool_infer, .kernel = max_unpool_kernel});
}

}  // namespace ferry::ops
