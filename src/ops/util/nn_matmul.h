// numpy-matmul shape rules (1-D operands promoted and their unit dim dropped, batch dims broadcast)
// and the batched matrix product loop shared by MatMul, MatMulInteger and QLinearMatMul.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/util/nn_common.h"

namespace ferry::ops::nn {

struct MatMulPlan {
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> out_dims;
  // For each output batch (row-major over the broadcast batch dims): the matrix offset in A and B.
  std::vector<int64_t> a_offsets, b_offsets;
};
Result<MatMulPlan> plan_matmul(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& op);

// y[batch, M, N] = a @ b; y is overwritten. Acc: double (floats) or int64/uint64 (integers, wrapping).
template <class Acc>
void matmul_core(const Acc* a, const Acc* b, Acc* y, const MatMulPlan& p);

// Output shape of numpy matmul on graph shapes; nullopt when a rank is unknown.
std::optional<Shape> infer_matmul_shape(const std::optional<Shape>* a, const std::optional<Shape>* b);

}  // namespace ferry::ops::nn
