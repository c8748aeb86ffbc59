// CenterCropPad (opset 18): crops or zero-pads each listed axis to the requested size, keeping the input
// centred (an odd difference puts the extra element at the end, as in the ONNX reference).
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<std::vector<int64_t>> crop_axes(const ir::Node& n, int64_t rank, size_t shape_len) {
  std::vector<int64_t> axes;
  if (n.has_attr("axes")) {
    FERRY_ASSIGN_OR_RETURN(axes, normalize_axes(n.attr_ints("axes"), rank));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (axes.size() != shape_len)
    return Status::invalid("shape has " + std::to_string(shape_len) + " entries for " + std::to_string(axes.size()) +
                           " axes");
  return axes;
}

Status center_crop_pad_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input_data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* st, tensor_input(ctx, 1, "shape"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_values(*st, "shape"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> axes, crop_axes(ctx.node(), x->rank(), shape.size()));
  const int r = x->rank();
  std::vector<int64_t> dims = x->dims();
  // Per axis: where the copied window starts in the input and in the output, and its length.
  std::vector<int64_t> in_start(r, 0), out_start(r, 0), len = x->dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], dim = x->dims()[a], want = shape[i];
    if (want < 0) return Status::invalid("shape " + dims_to_string(shape) + " has a negative entry");
    dims[a] = want;
    if (want < dim) {
      in_start[a] = (dim - want) / 2;
      len[a] = want;
    } else if (want > dim) {
      out_start[a] = (want - dim) / 2;
    }
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  const std::vector<int64_t> xst = strides_of(x->dims()), ost = strides_of(dims);
  int64_t in_base = 0, out_base = 0;
  for (int d = 0; d < r; ++d) {
    in_base += in_start[d] * xst[d];
    out_base += out_start[d] * ost[d];
  }
  // Copy the window into a temporary of its own shape, then scatter it into the output rows.
  FERRY_ASSIGN_OR_RETURN(Tensor window, Tensor::create(x->dtype(), len));
  strided_copy(x->raw(), in_base, xst, window.raw(), len, dtype_size(x->dtype()));
  if (window.numel() == 0) return Status();
  const size_t es = dtype_size(x->dtype());
  const int64_t row = r == 0 ? 1 : len[r - 1];
  const int64_t rows = window.numel() / row;
  std::vector<int64_t> pos(r > 0 ? r - 1 : 0, 0);
  const auto* src = static_cast<const uint8_t*>(window.raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  for (int64_t k = 0; k < rows; ++k) {
    int64_t off = out_base;
    for (int d = 0; d + 1 < r; ++d) off += pos[d] * ost[d];
    copy_elems(dst + off * es, src + k * row * es, row, es);
    for (int d = r - 2; d >= 0; --d) {
      if (++pos[d] < len[d]) break;
      pos[d] = 0;
    }
  }
  return Status();
}

Status center_crop_pad_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  auto shape = known_ints(ctx, 1);
  Shape out = **in;
  if (!shape) {
    ctx.set_output(0, dt, unknown_dims(out.size()));
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> axes, crop_axes(ctx.node(), out.size(), shape->size()));
  for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = Dim((*shape)[i]);
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_center_crop_pad(OpRegistry& r) {
  r.add(OpSchema{.op_type = "CenterCropPad", .since_version = 18, .min_inputs = 2, .max_inputs = 2,
                 .infer = center_crop_pad_infer, .kernel = center_crop_pad_kernel});
}

}  // namespace ferry::ops
