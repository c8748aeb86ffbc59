// Compress (keep the slices along an axis where a bool condition is true; flattened without an axis) and
// NonZero (indices of the non-zero elements, one row per dim).
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Status compress_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* c, tensor_input(ctx, 1, "condition"));
  if (c->dtype() != DType::kBool) return Status::invalid("condition must be bool, got " + dtype_str(c->dtype()));
  if (c->rank() != 1) return Status::invalid("condition must be 1-D, got " + c->describe());
  const bool has_axis = ctx.node().has_attr("axis");
  std::vector<int64_t> in_dims = x->dims();
  int64_t axis = 0;
  if (has_axis) {
    if (x->rank() == 0) return Status::invalid("Compress with an axis needs rank >= 1");
    FERRY_ASSIGN_OR_RETURN(axis, normalize_axis(ctx.node().attr_int("axis", 0), x->rank()));
  } else {
    in_dims = {x->numel()};
  }
  const int64_t dim = in_dims[axis];
  const bool* cv = c->data<bool>();
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < c->numel(); ++i) {
    if (!cv[i]) continue;
    if (i >= dim)
      return Status::invalid("condition[" + std::to_string(i) + "] is true but axis " + std::to_string(axis) +
                             " has only " + std::to_string(dim) + " entries");
    keep.push_back(i);
  }
  std::vector<int64_t> dims = in_dims;
  dims[axis] = static_cast<int64_t>(keep.size());
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in_dims[d];
  for (size_t d = axis + 1; d < in_dims.size(); ++d) inner *= in_dims[d];
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : keep) {
      copy_elems(dst, src + ((o * dim + k) * inner) * es, inner, es);
      dst += inner * es;
    }
  return Status();
}

Status compress_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  Dim kept;
  if (auto c = known_value(ctx, 1)) {
    if (c->dtype() == DType::kBool) {
      int64_t n = 0;
      for (int64_t i = 0; i < c->numel(); ++i) n += c->data<bool>()[i] ? 1 : 0;
      kept = Dim(n);
    }
  }
  if (!ctx.node().has_attr("axis")) {
    ctx.set_output(0, dt, Shape{kept});
    return Status();
  }
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in || (*in)->empty()) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), (*in)->size()));
  Shape out = **in;
  out[axis] = kept;
  ctx.set_output(0, dt, out);
  return Status();
}

Status nonzero_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "X"));
  std::vector<int64_t> hits;
  bool ok = dispatch_all(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x->data<T>();
    for (int64_t i = 0; i < x->numel(); ++i) {
      bool nz;
      if constexpr (is_half_v<T>) nz = static_cast<float>(p[i]) != 0.0f;
      else nz = p[i] != T(0);
      if (nz) hits.push_back(i);
    }
  });
  if (!ok) return unsupported_dtype("NonZero", x->dtype());
  // A 0-d input is treated as 1-D of one element (what numpy < 2 and ONNX Runtime do).
  std::vector<int64_t> dims = x->rank() == 0 ? std::vector<int64_t>{1} : x->dims();
  const int64_t r = static_cast<int64_t>(dims.size());
  const int64_t n = static_cast<int64_t>(hits.size());
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, DType::kInt64, {r, n}));
  int64_t* o = out->data<int64_t>();
  const std::vector<int64_t> st = strides_of(dims);
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = hits[k];
    for (int64_t d = 0; d < r; ++d) {
      o[d * n + k] = rem / st[d];
      rem %= st[d];
    }
  }
  return Status();
}

Status nonzero_infer(InferContext& ctx) {
  int r = ctx.input_rank(0);
  ctx.set_output(0, DType::kInt64, Shape{r < 0 ? Dim() : Dim(r == 0 ? 1 : r), Dim()});
  return Status();
}
}  // namespace

void register_compress(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Compress", .since_version = 9, .min_inputs = 2, .max_inputs = 2,
                 .infer = compress_infer, .kernel = compress_kernel});
  r.add(OpSchema{.op_type = "NonZero", .since_version = 9, .min_inputs = 1, .max_inputs = 1,
                 .infer = nonzero_infer, .kernel = nonzero_kernel});
}

}  // namespace ferry::ops
