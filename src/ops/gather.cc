// Gather (take along an axis), GatherElements (per-element take) and GatherND (index tuples with
// batch_dims). Indices may be negative (from the end); out-of-range indices are errors.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<std::vector<int64_t>> index_values(const Tensor& t) {
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return Status::invalid("indices must be int32 or int64, got " + dtype_str(t.dtype()));
  return t.to_int64_vector();
}

Status index_error(int64_t flat, int64_t value, int64_t axis, int64_t dim) {
  return Status::invalid("indices[" + std::to_string(flat) + "] = " + std::to_string(value) +
                         " is out of range for axis " + std::to_string(axis) + " of size " + std::to_string(dim));
}

Status gather_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, tensor_input(ctx, 1, "indices"));
  if (x->rank() == 0) return Status::invalid("Gather data must have rank >= 1");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), x->rank()));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> idx, index_values(*ind));
  const int64_t dim = x->dims()[axis];
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < -dim || idx[i] >= dim) return index_error(static_cast<int64_t>(i), idx[i], axis, dim);
    if (idx[i] < 0) idx[i] += dim;
  }
  std::vector<int64_t> dims(x->dims().begin(), x->dims().begin() + axis);
  dims.insert(dims.end(), ind->dims().begin(), ind->dims().end());
  dims.insert(dims.end(), x->dims().begin() + axis + 1, x->dims().end());
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  const size_t es = dtype_size(x->dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x->dims()[d];
  for (int64_t d = axis + 1; d < x->rank(); ++d) inner *= x->dims()[d];
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  const int64_t n = static_cast<int64_t>(idx.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      copy_elems(dst + ((o * n + k) * inner) * es, src + ((o * dim + idx[k]) * inner) * es, inner, es);
  return Status();
}

Status gather_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* xs = ctx.input_shape(0);
  const std::optional<Shape>* is = ctx.input_shape(1);
  if (!xs || !*xs || !is || !*is || (*xs)->empty()) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), (*xs)->size()));
  Shape out((*xs)->begin(), (*xs)->begin() + axis);
  out.insert(out.end(), (*is)->begin(), (*is)->end());
  out.insert(out.end(), (*xs)->begin() + axis + 1, (*xs)->end());
  ctx.set_output(0, dt, out);
  return Status();
}

Status gather_elements_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, tensor_input(ctx, 1, "indices"));
  if (x->rank() == 0) return Status::invalid("GatherElements data must have rank >= 1");
  if (ind->rank() != x->rank())
    return Status::invalid("indices " + ind->describe() + " must have the rank of data " + x->describe());
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), x->rank()));
  for (int d = 0; d < x->rank(); ++d)
    if (d != axis && ind->dims()[d] > x->dims()[d])
      return Status::invalid("indices " + ind->describe() + " are larger than data " + x->describe() +
                             " in dim " + std::to_string(d));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> idx, index_values(*ind));
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), ind->dims()));
  const size_t es = dtype_size(x->dtype());
  const std::vector<int64_t> xst = strides_of(x->dims());
  const int r = x->rank();
  std::vector<int64_t> pos(r, 0);
  const int64_t dim = x->dims()[axis];
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) {
    int64_t v = idx[i];
    if (v < -dim || v >= dim) return index_error(i, v, axis, dim);
    if (v < 0) v += dim;
    int64_t off = 0;
    for (int d = 0; d < r; ++d) off += (d == axis ? v : pos[d]) * xst[d];
    std::memcpy(dst + i * es, src + off * es, es);
    for (int d = r - 1; d >= 0; --d) {
      if (++pos[d] < ind->dims()[d]) break;
      pos[d] = 0;
    }
  }
  return Status();
}

Status gather_elements_infer(InferContext& ctx) {
  const std::optional<Shape>* is = ctx.input_shape(1);
  ctx.set_output(0, ctx.input_dtype(0), is ? *is : std::nullopt);
  return Status();
}

Status gather_nd_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* ind, tensor_input(ctx, 1, "indices"));
  if (ind->dtype() != DType::kInt64) return Status::invalid("GatherND indices must be int64, got " + dtype_str(ind->dtype()));
  const int64_t b = ctx.opset() >= 12 ? ctx.node().attr_int("batch_dims", 0) : 0;
  const int64_t r = x->rank(), q = ind->rank();
  if (r < 1 || q < 1) return Status::invalid("GatherND data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) return Status::invalid("batch_dims " + std::to_string(b) + " is out of range");
  for (int64_t d = 0; d < b; ++d)
    if (x->dims()[d] != ind->dims()[d])
      return Status::invalid("batch dim " + std::to_string(d) + " differs between data " + x->describe() +
                             " and indices " + ind->describe());
  const int64_t k = ind->dims()[q - 1];
  if (k < 1 || k > r - b)
    return Status::invalid("indices' last dim " + std::to_string(k) + " must be in [1, " + std::to_string(r - b) + "]");
  std::vector<int64_t> dims(ind->dims().begin(), ind->dims().end() - 1);
  dims.insert(dims.end(), x->dims().begin() + b + k, x->dims().end());
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  int64_t batch = 1, inner = 1, batch_data = 1;
  for (int64_t d = 0; d < b; ++d) batch *= x->dims()[d];
  for (int64_t d = b; d < r; ++d) batch_data *= x->dims()[d];
  for (int64_t d = b + k; d < r; ++d) inner *= x->dims()[d];
  int64_t tuples = 1;  // index tuples per batch
  for (int64_t d = b; d < q - 1; ++d) tuples *= ind->dims()[d];
  const std::vector<int64_t> xst = strides_of(x->dims());
  const int64_t* iv = ind->data<int64_t>();
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t tuple = bi * tuples + t;
      int64_t off = bi * batch_data;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dim = x->dims()[b + j];
        int64_t v = iv[tuple * k + j];
        if (v < -dim || v >= dim) return index_error(tuple * k + j, v, b + j, dim);
        if (v < 0) v += dim;
        off += v * xst[b + j];
      }
      copy_elems(dst + tuple * inner * es, src + off * es, inner, es);
    }
  }
  return Status();
}

Status gather_nd_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* xs = ctx.input_shape(0);
  const std::optional<Shape>* is = ctx.input_shape(1);
  if (!xs || !*xs || !is || !*is || (*is)->empty() || !(*is)->back().is_static()) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const int64_t b = ctx.opset() >= 12 ? ctx.node().attr_int("batch_dims", 0) : 0;
  const int64_t k = (*is)->back().value;
  const int64_t r = static_cast<int64_t>((*xs)->size());
  if (b < 0 || b >= r || k < 1 || k > r - b) return Status::invalid("GatherND: indices' last dim " + std::to_string(k) +
                                                         " does not fit data of rank " + std::to_string(r));
  Shape out((*is)->begin(), (*is)->end() - 1);
  out.insert(out.end(), (*xs)->begin() + b + k, (*xs)->end());
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_gather(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Gather", .since_version = 1, .min_inputs = 2, .max_inputs = 2,
                 .infer = gather_infer, .kernel = gather_kernel});
  r.add(OpSchema{.op_type = "GatherElements", .since_version = 11, .min_inputs = 2, .max_inputs = 2,
                 .infer = gather_elements_infer, .kernel = gather_elements_kernel});
  r.add(OpSchema{.op_type = "GatherND", .since_version = 11, .min_inputs = 2, .max_inputs = 2,
                 .infer = gather_nd_infer, .kernel = gather_nd_kernel});
}

}  // namespace ferry::ops
