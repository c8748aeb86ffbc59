// Vectorized float32 binary arithmetic with numpy broadcasting, for the shapes oneDNN 2.6's binary
// primitive serves only with its reference implementation (e.g. squeeze-excite's [N,C,H,W] * [N,C,1,1]
// in plain NCHW: 0.03 GFLOP/s there). Compiled per x86 ISA with Highway, picked at run time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::backends::cpu {

enum class VecBinary { kAdd, kSub, kMul, kDiv, kMax, kMin };

// How a broadcast binary op walks memory: the output's dims merged where both operands step alike,
// so the innermost run is long and each operand steps 1 (full) or 0 (repeated) through it.
struct BroadcastPlan {
  std::vector<int64_t> outer;            // merged outer dims (may be empty)
  std::vector<int64_t> a_outer, b_outer; // each operand's element stride per outer dim (0: repeated)
  int64_t inner = 1;                     // length of the innermost run
  int64_t a_inner = 1, b_inner = 1;      // 1 or 0
  int64_t total = 1;                     // output elements
};

// The plan for out = a op b with numpy broadcasting of plain row-major dims (ranks may differ).
// Precondition: out_dims = broadcast(a_dims, b_dims).
BroadcastPlan plan_broadcast(const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims,
                             const std::vector<int64_t>& out_dims);

// out = a op b over `plan`, with the inner runs spread over OpenMP threads when there is enough work.
// `out` may alias `a` or `b` when that operand has the output's shape.
void vec_binary(VecBinary op, const BroadcastPlan& plan, const float* a, const float* b, float* out);

}  // namespace ferry::backends::cpu
