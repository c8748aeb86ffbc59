#include "ops/util/control_util.h"

#include <cstring>

namespace ferry::ops {

ir::Graph* mutable_subgraph(ir::Node& node, const std::string& name) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end() || it->second.kind != ir::Attribute::Kind::kGraph) return nullptr;
  return it->second.g.get();
}

void seed_value_type(ir::Value& dst, ir::ValueKind kind, DType dtype, const std::optional<Shape>& shape) {
  if (dst.kind == ir::ValueKind::kTensor && kind != ir::ValueKind::kTensor) dst.kind = kind;
  if (dst.dtype == DType::kUndefined) dst.dtype = dtype;
  if (!dst.shape && shape && dst.kind == ir::ValueKind::kTensor) dst.shape = shape;
}

void copy_value_type(InferContext& ctx, int i, const ir::Value& from) {
  if (!ctx.node().has_output(i)) return;
  ir::Value* out = ctx.node().outputs[i];
  if (from.kind != ir::ValueKind::kTensor) out->kind = from.kind;
  ctx.set_output(i, from.dtype, from.kind == ir::ValueKind::kTensor ? from.shape : std::nullopt);
}

namespace {
int64_t prod(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}
}  // namespace

Result<Tensor> slice_along(const Tensor& t, int axis, int64_t start, int64_t len) {
  if (axis < 0 || axis >= t.rank()) return Status::invalid("slice axis out of range");
  if (start < 0 || len < 0 || start + len > t.dim(axis))
    return Status::invalid("slice [" + std::to_string(start) + ", " + std::to_string(start + len) +
                           ") is outside dimension " + std::to_string(t.dim(axis)));
  std::vector<int64_t> dims = t.dims();
  dims[axis] = len;
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(t.dtype(), dims));
  const size_t es = dtype_size(t.dtype());
  const int64_t outer = prod(t.dims(), 0, axis);
  const int64_t inner = prod(t.dims(), axis + 1, t.dims().size()) * es;
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    const uint8_t* s = src + (o * t.dim(axis) + start) * inner;
    if (len > 0 && inner > 0) std::memcpy(dst + o * len * inner, s, len * inner);
  }
  return out;
}

Result<Tensor> concat_along(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) return Status::invalid("cannot concatenate an empty list of tensors");
  const Tensor& first = parts[0];
  if (axis < 0 || axis >= first.rank()) return Status::invalid("concat axis out of range");
  std::vector<int64_t> dims = first.dims();
  int64_t total = 0;
  for (const Tensor& p : parts) {
    if (p.dtype() != first.dtype()) return Status::invalid("cannot concatenate tensors of different dtypes");
    if (p.rank() != first.rank()) return Status::invalid("cannot concatenate tensors of different ranks");
    for (int d = 0; d < first.rank(); ++d)
      if (d != axis && p.dim(d) != first.dim(d))
        return Status::invalid("cannot concatenate " + p.describe() + " with " + first.describe() +
                               " along axis " + std::to_string(axis));
    total += p.dim(axis);
  }
  dims[axis] = total;
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(first.dtype(), dims));
  const size_t es = dtype_size(first.dtype());
  const int64_t outer = prod(dims, 0, axis);
  const int64_t inner = prod(dims, axis + 1, dims.size()) * es;
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& p : parts) {
      const int64_t n = p.dim(axis) * inner;
      if (n) std::memcpy(dst, static_cast<const uint8_t*>(p.raw()) + o * n, n);
      dst += n;
    }
  }
  return out;
}

Result<Tensor> stack_along(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) return Status::invalid("cannot stack an empty list of tensors");
  std::vector<Tensor> expanded;
  expanded.reserve(parts.size());
  for (const Tensor& p : parts) {
    if (axis < 0 || axis > p.rank()) return Status::invalid("stack axis out of range");
    std::vector<int64_t> d = p.dims();
    d.insert(d.begin() + axis, 1);
    FERRY_ASSIGN_OR_RETURN(Tensor r, p.reshaped(d));
    expanded.push_back(std::move(r));
  }
  return concat_along(expanded, axis);
}

Result<int64_t> scalar_int(const Tensor& t, const char* what) {
  if (t.numel() != 1) return Status::invalid(std::string(what) + " must hold exactly one value, got " + t.describe());
  if (!is_integer(t.dtype()) && t.dtype() != DType::kBool)
    return Status::invalid(std::string(what) + " must be an integer tensor, got " + t.describe());
  return t.as_int64(0);
}

}  // namespace ferry::ops
