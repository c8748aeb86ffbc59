// The MKL packed-sgemm path of the cpu MatMul kernel (backends/cpu/mkl_gemm.h): the pack multiplies
// and unpacks exactly, Linear layers with K, N >= 512 pick it (and every post-op, Bias or none, the
// residual and Gemm's transB / beta match the reference backend), an adopted pack serves a second
// batch size and unpacks bit for bit, and weights with inf fall back to oneDNN. Skipped where ferry
// was built without MKL. The path is forced (--cpu-gemm mkl), so it is tested on any vendor's CPU.
#include "unit/backends/cpu/linear_case_util.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_choices.h"
#include "backends/cpu/mkl_gemm.h"
#include "backends/cpu/vec_gemm.h"

namespace ferry::backends::cpu::testing {
namespace {

// ferry leaves MKL unused on non-Intel CPUs (slower there), but the path must be right wherever it can
// be forced: every backend here is made with --cpu-gemm mkl.
BackendOptions mkl_options() {
  BackendOptions o;
  o.cpu.gemm = CpuGemm::kMkl;
  return o;
}

#define SKIP_WITHOUT_MKL() \
  if (choose_gemm(mkl_options().cpu).used != CpuGemm::kMkl) GTEST_SKIP() << "ferry was built without MKL"
#define SKIP_UNLESS_MKL_PATH() SKIP_WITHOUT_MKL()

// Equal values (a -0.0 weight unpacks as +0.0: 1 * -0 + 0 * others is +0; products are unaffected).
bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dims() != b.dims() || !a.is_plain() || !b.is_plain()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (!(a.data<float>()[i] == b.data<float>()[i])) return false;
  return true;
}

TEST(MklPackedB, MultipliesAndUnpacksExactly) {
  SKIP_WITHOUT_MKL();
  for (bool trans : {false, true}) {
    const int64_t K = 70, N = 45;
    Tensor b = random_tensor(trans ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 11);
    b.data<float>()[3] = -0.f;
    auto packed = MklPackedB::pack(b, trans);
    ASSERT_TRUE(packed.ok()) << packed.status().to_string();
    EXPECT_EQ((*packed)->k(), K);
    EXPECT_EQ((*packed)->n(), N);
    auto back = (*packed)->unpack();
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_TRUE(bitwise_equal(*back, b)) << "trans " << trans;
    for (int64_t m : {1, 17, 300}) {
      Tensor a = random_tensor({m, K}, 12);
      Tensor c(DType::kFloat32, {m, N});
      (*packed)->multiply(a.data<float>(), m, c.data<float>());
      Tensor want(DType::kFloat32, {m, N});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += double(a.data<float>()[i * K + k]) * b.data<float>()[trans ? j * K + k : k * N + j];
          want.data<float>()[i * N + j] = static_cast<float>(s);
        }
      expect_close(c, want, 1e-5f, "m " + std::to_string(m));
    }
  }
}

TEST(MklPackedB, RefusesNonFiniteWeights) {
  SKIP_WITHOUT_MKL();
  Tensor b = random_tensor({8, 8}, 1);
  b.data<float>()[5] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(MklPackedB::pack(b, false).ok());
}

class CpuMklMatMul : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CpuMklMatMul, TakesTheMklPathAndMatchesReference) {
  SKIP_UNLESS_MKL_PATH();
  check_linear_case(GetParam(), "cpu:mkl:sgemm_packed", CpuGemm::kMkl);
}

INSTANTIATE_TEST_SUITE_P(
    Linear, CpuMklMatMul,
    ::testing::Values(
        LinearCase{"plain", "MatMul", {40, 512}, {512, 520}, {}, false, {}},
        LinearCase{"folded_batch", "MatMul", {2, 20, 512}, {512, 512}, {}, false, {}},
        LinearCase{"bias_gelu", "FusedMatMul", {2, 20, 512}, {512, 544}, {544}, true, linear_post_ops({"Gelu"}, {0}, {0})},
        LinearCase{"relu_no_bias", "FusedMatMul", {30, 512}, {512, 512}, {}, false, linear_post_ops({"Relu"}, {0}, {0})},
        LinearCase{"bias_residual", "FusedMatMul", {2, 20, 512}, {512, 512}, {512}, true,
                   linear_post_ops({"sum"}, {0}, {0}), true},
        LinearCase{"residual_then_relu_no_bias", "FusedMatMul", {24, 512}, {512, 512}, {}, false,
                   linear_post_ops({"sum", "Relu"}, {0, 0}, {0, 0}), true},
        LinearCase{"trans_b_silu_mul", "FusedMatMul", {20, 600}, {530, 600}, {530}, true,
                   linear_post_ops({"Silu", "Mul"}, {0, 0.5f}, {0, 0}, 1)},
        LinearCase{"gemm_trans_b_beta", "Gemm", {20, 512}, {600, 512}, {600}, true,
                   {{"transB", int_attr(1)}, {"beta", float_attr(0.5f)}}}),
    [](const ::testing::TestParamInfo<LinearCase>& i) { return i.param.name; });

// One executor, three batch sizes: the pack adopted as B's initializer serves each, and the adopted
// initializer still reads back as the original weights (up to the sign of zero, mkl_gemm.h).
TEST(CpuMklMatMul, AdoptedPackServesEveryBatchAndUnpacksExactly) {
  SKIP_UNLESS_MKL_PATH();
  check_adopted_pack(512, 640, {32, 48, 20}, "cpu:mkl:sgemm_packed", /*exact_zero_sign=*/false, CpuGemm::kMkl);
}

TEST(CpuMklMatMul, NonFiniteWeightsStayOnOneDnn) {
  SKIP_UNLESS_MKL_PATH();
  GraphBuilder g;
  Tensor w = random_tensor({512, 512}, 5);
  w.data<float>()[7] = std::numeric_limits<float>::infinity();
  g.output(g.node("MatMul", {g.input("a", {32, 512}), g.constant(w)}, {}, 13));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu", mkl_options());
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)->name().rfind("cpu:onednn:matmul:", 0), 0u) << (*k)->name();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
