#include "ops/util/nn_matmul.h"

#include "ops/util/broadcast.h"

namespace ferry::ops::nn {

Result<MatMulPlan> plan_matmul(const std::vector<int64_t>& a_in, const std::vector<int64_t>& b_in,
                               const std::string& op) {
  if (a_in.empty() || b_in.empty()) return Status::invalid(op + ": operands must have rank >= 1");
  std::vector<int64_t> a = a_in, b = b_in;
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  MatMulPlan p;
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = b.back();
  if (b[b.size() - 2] != p.K)
    return Status::invalid(op + ": inner dims differ: A " + dims_to_string(a_in) + ", B " + dims_to_string(b_in));
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = broadcast_dims(ab, bb);
  if (!batch.ok())
    return Status::invalid(op + ": batch dims do not broadcast: A " + dims_to_string(a_in) + ", B " +
                           dims_to_string(b_in));
  p.out_dims = *batch;
  if (!a1) p.out_dims.push_back(p.M);
  if (!b1) p.out_dims.push_back(p.N);
  FERRY_RETURN_IF_ERROR(checked_numel(p.out_dims).status());
  const int64_t a_mat = p.M * p.K, b_mat = p.K * p.N;
  int64_t nbatch = 1;
  for (int64_t d : *batch) nbatch *= d;
  p.a_offsets.reserve(nbatch);
  p.b_offsets.reserve(nbatch);
  if (batch->empty()) {
    p.a_offsets.push_back(0);
    p.b_offsets.push_back(0);
  } else {
    for_each_broadcast(*batch, ab, bb, [&](int64_t, int64_t ia, int64_t ib) {
      p.a_offsets.push_back(ia * a_mat);
      p.b_offsets.push_back(ib * b_mat);
    });
  }
  return p;
}

template <class Acc>
void matmul_core(const Acc* a, const Acc* b, Acc* y, const MatMulPlan& p) {
  const int64_t M = p.M, K = p.K, N = p.N;
  for (size_t bi = 0; bi < p.a_offsets.size(); ++bi) {
    const Acc* ap = a + p.a_offsets[bi];
    const Acc* bp = b + p.b_offsets[bi];
    Acc* yp = y + static_cast<int64_t>(bi) * M * N;
    for (int64_t i = 0; i < M * N; ++i) yp[i] = Acc(0);
    // i-k-j order keeps the inner loop contiguous in B and Y.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const Acc av = ap[i * K + k];
        const Acc* brow = bp + k * N;
        Acc* yrow = yp + i * N;
        for (int64_t j = 0; j < N; ++j) yrow[j] += av * brow[j];
      }
  }
}

template void matmul_core<double>(const double*, const double*, double*, const MatMulPlan&);
template void matmul_core<int64_t>(const int64_t*, const int64_t*, int64_t*, const MatMulPlan&);
template void matmul_core<uint64_t>(const uint64_t*, const uint64_t*, uint64_t*, const MatMulPlan&);

std::optional<Shape> infer_matmul_shape(const std::optional<Shape>* a_opt, const std::optional<Shape>* b_opt) {
  if (!a_opt || !b_opt || !*a_opt || !*b_opt) return std::nullopt;
  Shape a = **a_opt, b = **b_opt;
  if (a.empty() || b.empty()) return std::nullopt;
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), Dim(1));
  if (b1) b.push_back(Dim(1));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape out = broadcast_shapes(ab, bb);
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  return out;
}

}  // namespace ferry::ops::nn
