// ArrayFeatureExtractor (ai.onnx.ml 1): picks elements of the last axis of X at the given indices
// (flattened). A 1-D X gives a [1, n] result, as in the reference and ONNX Runtime.
#include <cstring>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

Status array_feature_extractor_kernel(KernelContext& ctx) {
  for (int i = 0; i < 2; ++i)
    if (!ctx.has_input(i) || !ctx.input_value(i)->is_tensor())
      return Status::invalid("input " + std::to_string(i) + " must be a tensor");
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (x.rank() < 1) return Status::invalid("X must have rank >= 1; got " + x.describe());
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32)
    return Status::invalid("Y (indices) must be int64; got " + indices.describe());
  const int64_t last = x.dim(-1);
  std::vector<int64_t> idx = indices.to_int64_vector();
  for (size_t i = 0; i < idx.size(); ++i) {
    // Negative indices count from the end, as numpy indexing in the reference does.
    if (idx[i] < -last || idx[i] >= last)
      return Status::invalid("index Y[" + std::to_string(i) + "] = " + std::to_string(idx[i]) +
                             " is out of range for the last axis of X of size " + std::to_string(last));
    if (idx[i] < 0) idx[i] += last;
  }
  std::vector<int64_t> out_dims = x.rank() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>(x.dims().begin(), x.dims().end() - 1);
  const int64_t n = static_cast<int64_t>(idx.size());
  out_dims.push_back(n);
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x.dtype(), out_dims));
  const size_t es = dtype_size(x.dtype());
  const int64_t rows = last == 0 ? 0 : x.numel() / last;
  const auto* src = static_cast<const unsigned char*>(x.raw());
  auto* dst = static_cast<unsigned char*>(out->raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + (r * n + j) * es, src + (r * last + idx[j]) * es, es);
  return Status();
}

Status array_feature_extractor_infer(InferContext& ctx) {
  std::optional<Shape> shape;
  const std::optional<Shape>* xs = ctx.input_shape(0);
  const std::optional<Shape>* ys = ctx.input_shape(1);
  if (xs && *xs && !(*xs)->empty()) {
    Shape s = (*xs)->size() == 1 ? Shape{Dim(1)} : Shape((*xs)->begin(), (*xs)->end() - 1);
    Dim n;
    if (ys && *ys && is_static(**ys)) {
      int64_t count = 1;
      for (const Dim& d : **ys) count *= d.value;
      n = Dim(count);
    }
    s.push_back(n);
    shape = std::move(s);
  }
  ctx.set_output(0, ctx.input_dtype(0), shape);
  return Status();
}

}  // namespace

void register_ml_array_feature_extractor(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "ArrayFeatureExtractor",
      .domain = "ai.onnx.ml",
      .since_version = 1,
      .min_inputs = 2,
      .max_inputs = 2,
      .infer = array_feature_extractor_infer,
      .kernel = array_feature_extractor_kernel,
  });
}

}  // namespace ferry::ops
