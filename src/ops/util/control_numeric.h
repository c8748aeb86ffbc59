// Numeric helpers for the ops-control kernels that compute in double but must round intermediates the
// way the ONNX reference (NumPy in the input dtype) does, so half-precision results agree.
#pragma once
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace ferry::ops {

// Rounds x to the precision of `dt` (floating dtypes; others pass through).
inline double round_to(DType dt, double x) {
  switch (dt) {
    case DType::kFloat32: return static_cast<float>(x);
    case DType::kFloat16: return static_cast<float>(float16(static_cast<float>(x)));
    case DType::kBFloat16: return static_cast<float>(bfloat16(static_cast<float>(x)));
    default: return x;
  }
}

// A floating tensor's elements as doubles.
inline std::vector<double> to_doubles(const Tensor& t) { return t.to_double_vector(); }

// Writes doubles into a new floating tensor of dtype dt.
inline Result<Tensor> from_doubles(DType dt, const std::vector<int64_t>& dims, const std::vector<double>& v) {
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(dt, dims));
  bool ok = dispatch_floating(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (size_t i = 0; i < v.size() && i < static_cast<size_t>(out.numel()); ++i) p[i] = static_cast<T>(v[i]);
  });
  if (!ok) return Status::invalid("expected a floating dtype, got " + std::string(dtype_name(dt)));
  return out;
}

// NaN-propagating max (NumPy's np.max semantics).
inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  return a > b ? a : b;
}

}  // namespace ferry::ops
