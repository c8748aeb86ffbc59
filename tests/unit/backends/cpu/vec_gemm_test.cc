// The own packed GEMM of the cpu MatMul kernel (backends/cpu/vec_gemm.h): the pack multiplies (every
// register-tile height, a last panel of 1..16 columns, several K slices and blocks, both thread
// splits) and unpacks bit for bit (-0.0, inf and NaN included); on CPUs where it is chosen (AVX2
// without AVX-512) Linear layers take it, with every post-op, Bias or none, the residual and Gemm's
// transB / beta matching the reference backend, and an adopted pack serves a second batch size; up to
// 15 rows (the few-rows path) Linear layers take it on every AVX2 CPU.
#include "unit/backends/cpu/linear_case_util.h"

#include <omp.h>

#include <cmath>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/isa_probe.h"
#include "backends/cpu/kernel_choices.h"
#include "backends/cpu/vec_gemm.h"

namespace ferry::backends::cpu::testing {
namespace {

#define SKIP_WITHOUT_AVX2() \
  if (!isa_has(dnnl::cpu_isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU"
// The own GEMM is forced (--cpu-gemm own): it is tested on every AVX2 CPU, AVX-512 ones included.
#define SKIP_UNLESS_CHOSEN() SKIP_WITHOUT_AVX2()

// C = A * B in double, B stored [K, N] or [N, K].
Tensor reference_product(const Tensor& a, const Tensor& b, int64_t m, int64_t K, int64_t N, bool trans) {
  Tensor want(DType::kFloat32, {m, N});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(a.data<float>()[i * K + k]) * b.data<float>()[trans ? j * K + k : k * N + j];
      want.data<float>()[i * N + j] = static_cast<float>(s);
    }
  return want;
}

TEST(VecPackedB, MultipliesAcrossTilesSlicesAndBlocks) {
  SKIP_WITHOUT_AVX2();
  struct Shape {
    int64_t K, N;
  };
  // K 513 / 800: two / three K slices (384 + 129, 384 + 384 + 32); N 17 / 31: a last panel of 1 / 15
  // columns; N 400: two column blocks (384 + 16), more where the threads need them; K 1100: two K slices
  // of the few-rows path (1024 + 76), N 33 a partial panel in the second thread's share.
  for (Shape s : {Shape{1, 1}, Shape{7, 16}, Shape{300, 17}, Shape{64, 31}, Shape{513, 400}, Shape{800, 40},
                  Shape{1100, 33}})
    for (bool trans : {false, true}) {
      Tensor b = random_tensor(trans ? std::vector<int64_t>{s.N, s.K} : std::vector<int64_t>{s.K, s.N}, 11);
      auto packed = VecPackedB::pack(b, trans);
      ASSERT_TRUE(packed.ok()) << packed.status().to_string();
      EXPECT_EQ((*packed)->k(), s.K);
      EXPECT_EQ((*packed)->n(), s.N);
      // M: the few-rows path (up to 15: one and two register tiles), every tile height of the blocked
      // path (1..6 rows left over from 16 up), more than one row block (144), one thread and all.
      for (int64_t m : {1, 5, 6, 9, 11, 15, 16, 17, 150, 301})
        for (int threads : {1, 2}) {
          Tensor a = random_tensor({m, s.K}, 12 + m);
          Tensor c(DType::kFloat32, {m, s.N});
          omp_set_num_threads(threads);
          (*packed)->multiply(a.data<float>(), m, c.data<float>());
          omp_set_num_threads(omp_get_num_procs());
          expect_close(c, reference_product(a, b, m, s.K, s.N, trans), 1e-4f,
                       "K " + std::to_string(s.K) + " N " + std::to_string(s.N) + " m " + std::to_string(m) +
                           (trans ? " trans" : ""));
        }
    }
}

TEST(VecPackedB, UnpacksBitForBit) {
  SKIP_WITHOUT_AVX2();
  for (bool trans : {false, true}) {
    Tensor b = random_tensor(trans ? std::vector<int64_t>{37, 19} : std::vector<int64_t>{19, 37}, 3);
    b.data<float>()[0] = -0.f;
    b.data<float>()[5] = std::numeric_limits<float>::infinity();
    b.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
    auto packed = VecPackedB::pack(b, trans);
    ASSERT_TRUE(packed.ok());
    auto back = (*packed)->unpack();
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->dims(), b.dims());
    EXPECT_EQ(std::memcmp(back->data<float>(), b.data<float>(), b.numel() * sizeof(float)), 0) << "trans " << trans;
  }
}

TEST(VecPackedB, RefusesWhatItCannotPack) {
  SKIP_WITHOUT_AVX2();
  EXPECT_FALSE(VecPackedB::pack(random_tensor({2, 3, 4}, 1), false).ok());
  EXPECT_FALSE(VecPackedB::pack(Tensor(DType::kFloat32, {0, 4}), false).ok());
  EXPECT_FALSE(VecPackedB::pack(Tensor(DType::kInt32, {4, 4}), false).ok());
}

class CpuVecGemmMatMul : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CpuVecGemmMatMul, TakesThePackedPathAndMatchesReference) {
  SKIP_UNLESS_CHOSEN();
  check_linear_case(GetParam(), "cpu:vec:gemm_packed_avx2", CpuGemm::kOwn);
}

INSTANTIATE_TEST_SUITE_P(
    Linear, CpuVecGemmMatMul,
    ::testing::Values(
        LinearCase{"plain", "MatMul", {40, 300}, {300, 200}, {}, false, {}},
        LinearCase{"folded_batch", "MatMul", {2, 20, 128}, {128, 96}, {}, false, {}},
        LinearCase{"bias_gelu", "FusedMatMul", {2, 20, 128}, {128, 250}, {250}, true, linear_post_ops({"Gelu"}, {0}, {0})},
        LinearCase{"relu_no_bias", "FusedMatMul", {30, 64}, {64, 64}, {}, false, linear_post_ops({"Relu"}, {0}, {0})},
        LinearCase{"bias_residual", "FusedMatMul", {2, 20, 96}, {96, 80}, {80}, true, linear_post_ops({"sum"}, {0}, {0}),
                   true},
        LinearCase{"residual_then_relu_no_bias", "FusedMatMul", {24, 128}, {128, 100}, {}, false,
                   linear_post_ops({"sum", "Relu"}, {0, 0}, {0, 0}), true},
        LinearCase{"trans_b_silu_mul", "FusedMatMul", {20, 600}, {530, 600}, {530}, true,
                   linear_post_ops({"Silu", "Mul"}, {0, 0.5f}, {0, 0}, 1)},
        LinearCase{"gemm_trans_b_beta", "Gemm", {20, 512}, {600, 512}, {600}, true,
                   {{"transB", int_attr(1)}, {"beta", float_attr(0.5f)}}}),
    [](const ::testing::TestParamInfo<LinearCase>& i) { return i.param.name; });

// Up to 15 rows the few-rows path serves a constant B on every CPU with AVX2 (the default GEMM choice),
// with the same epilogues; --cpu-gemm onednn keeps oneDNN's matmul.
class CpuFewRowsMatMul : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CpuFewRowsMatMul, TakesTheFewRowsPathAndMatchesReference) {
  SKIP_WITHOUT_AVX2();
  check_linear_case(GetParam(), "cpu:vec:gemm_few_rows", CpuGemm::kAuto);
  check_linear_case(GetParam(), "cpu:onednn:matmul", CpuGemm::kOnednn);
}

INSTANTIATE_TEST_SUITE_P(
    Linear, CpuFewRowsMatMul,
    ::testing::Values(
        LinearCase{"one_row", "MatMul", {1, 1100}, {1100, 200}, {}, false, {}},
        LinearCase{"decoder_step_bias_gelu", "FusedMatMul", {1, 1, 128}, {128, 250}, {250}, true,
                   linear_post_ops({"Gelu"}, {0}, {0})},
        LinearCase{"eight_rows_residual", "FusedMatMul", {8, 96}, {96, 80}, {80}, true, linear_post_ops({"sum"}, {0}, {0}),
                   true},
        LinearCase{"gemm_trans_b_beta", "Gemm", {15, 512}, {600, 512}, {600}, true,
                   {{"transB", int_attr(1)}, {"beta", float_attr(0.5f)}}}),
    [](const ::testing::TestParamInfo<LinearCase>& i) { return i.param.name; });

// One executor, three batch sizes: the pack adopted as B's initializer serves each, and the adopted
// initializer reads back as the original weights bit for bit.
TEST(CpuVecGemmMatMul, AdoptedPackServesEveryBatchAndUnpacksExactly) {
  SKIP_UNLESS_CHOSEN();
  check_adopted_pack(256, 160, {32, 48, 20}, "cpu:vec:gemm_packed_avx2", /*exact_zero_sign=*/true, CpuGemm::kOwn);
}

TEST(CpuFewRowsMatMul, AdoptedPackServesEveryBatchAndUnpacksExactly) {
  SKIP_WITHOUT_AVX2();
  check_adopted_pack(256, 160, {1, 12, 4}, "cpu:vec:gemm_few_rows", /*exact_zero_sign=*/true, CpuGemm::kAuto);
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
