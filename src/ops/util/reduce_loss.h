// The negative-log-likelihood core shared by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace ferry::ops {

// log_prob: [N, C, D1, ...] (as doubles, with its dims), target: [N, D1, ...] integer class indices,
// weight: optional [C]. loss[n, d...] = -log_prob[n, target, d...] * weight[target], 0 where target ==
// ignore_index. reduction "none" returns the per-element losses (target's shape), "sum" their sum, and
// "mean" their sum divided by the sum of the weights applied (the count of non-ignored elements when
// there are no weights). The result has dtype `out_dtype`. A target outside [0, C) that is not
// ignore_index is an error naming it.
Result<Tensor> nll_loss(const std::string& op, const std::vector<double>& log_prob,
                        const std::vector<int64_t>& dims, const Tensor& target, const Tensor* weight,
                        std::optional<int64_t> ignore_index, const std::string& reduction, DType out_dtype);

}  // namespace ferry::ops
