#include "ops/util/reduce_loss.h"

#include "ops/util/reduce_util.h"

namespace ferry::ops {

Result<Tensor> nll_loss(const std::string& op, const std::vector<double>& log_prob,
                        const std::vector<int64_t>& dims, const Tensor& target, const Tensor* weight,
                        std::optional<int64_t> ignore_index, const std::string& reduction, DType out_dtype) {
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return Status::invalid(op + ": reduction must be none, sum or mean, got '" + reduction + "'");
  if (dims.size() < 2) return Status::invalid(op + " needs an input of rank >= 2, got " + dims_to_string(dims));
  const int64_t n = dims[0], c = dims[1];
  std::vector<int64_t> target_dims = {n};
  target_dims.insert(target_dims.end(), dims.begin() + 2, dims.end());
  if (target.dims() != target_dims)
    return Status::invalid(op + ": target " + target.describe() + " must have shape " + dims_to_string(target_dims));
  if (is_floating(target.dtype()) || target.dtype() == DType::kBool)
    return Status::invalid(op + ": target must be an integer tensor, got " + target.describe());
  std::vector<double> w;
  if (weight) {
    if (weight->rank() != 1 || weight->dim(0) != c)
      return Status::invalid(op + ": weight " + weight->describe() + " must have shape [" + std::to_string(c) + "]");
    w = weight->to_double_vector();
  }
  const int64_t inner = target.numel() / std::max<int64_t>(n, 1);  // prod(D1, ...)
  std::vector<double> loss(static_cast<size_t>(target.numel()), 0.0);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t e = b * inner + i;
      const int64_t t = target.as_int64(e);
      if (ignore_index && t == *ignore_index) continue;
      if (t < 0 || t >= c)
        return Status::invalid(op + ": target value " + std::to_string(t) + " at element " + std::to_string(e) +
                               " is outside [0, " + std::to_string(c) + ")");
      const double wt = w.empty() ? 1.0 : w[t];
      loss[e] = -log_prob[(b * c + t) * inner + i] * wt;
      loss_sum += loss[e];
      weight_sum += wt;
    }
  }
  Tensor out;
  if (reduction == "none") {
    FERRY_ASSIGN_OR_RETURN(out, Tensor::create(out_dtype, target_dims));
  } else {
    FERRY_ASSIGN_OR_RETURN(out, Tensor::create(out_dtype, {}));
    loss = {reduction == "sum" ? loss_sum : loss_sum / weight_sum};
  }
  bool handled = dispatch_floating(out_dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < loss.size(); ++i) out.data<T>()[i] = from_double<T>(loss[i]);
  });
  if (!handled) return Status::unsupported(op + ": unsupported dtype " + std::string(dtype_name(out_dtype)));
  return out;
}

}  // namespace ferry::ops
