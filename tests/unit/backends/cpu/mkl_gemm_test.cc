// The MKL packed-sgemm path of the cpu MatMul kernel (backends/cpu/mkl_gemm.h): the pack multiplies
// and unpacks exactly, Linear layers with K, N >= 512 pick it (and every post-op, Bias or none, the
// residual and Gemm's transB / beta match the reference backend), an adopted pack serves a second
// batch size and unpacks bit for bit, and weights with inf fall back to oneDNN. Skipped where ferry
// was built without MKL (or run with FERRY_CPU_MKL=0).
#include "unit/backends/cpu/conv_test_util.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/mkl_gemm.h"
#include "backends/cpu/vec_gemm.h"

namespace ferry::backends::cpu::testing {
namespace {

// ferry leaves MKL unused on non-Intel CPUs (slower there), but the path must be right wherever it can
// be forced: FERRY_CPU_MKL=1 unless the caller set it, before main() and so before the choice is made.
const bool kMklForced = setenv("FERRY_CPU_MKL", "1", /*overwrite=*/0) == 0;

#define SKIP_WITHOUT_MKL() \
  if (!kMklForced || !mkl_enabled()) GTEST_SKIP() << "ferry was built without MKL, or FERRY_CPU_MKL=0"
// The MatMul kernel takes the MKL path only where the own packed GEMM is not chosen (AVX-512 CPUs).
#define SKIP_UNLESS_MKL_PATH()                                                                   \
  SKIP_WITHOUT_MKL();                                                                            \
  if (vec_gemm_enabled()) GTEST_SKIP() << "no AVX-512: Linear layers take the own packed GEMM (vec_gemm_test)"

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

struct MklCase {
  std::string name;
  std::string op;
  std::vector<int64_t> a, b, bias;
  bool has_bias;
  Attrs attrs;
  bool with_z = false;
};

void PrintTo(const MklCase& c, std::ostream* os) { *os << c.name; }

class CpuMklMatMul : public ::testing::TestWithParam<MklCase> {};

Attrs post_ops(std::vector<std::string> ops, std::vector<float> alpha, std::vector<float> beta, int trans_b = 0) {
  return {{"trans_a", int_attr(0)},        {"trans_b", int_attr(trans_b)},       {"alpha", float_attr(1.f)},
          {"post_ops", strings_attr(ops)}, {"post_op_alpha", floats_attr(alpha)}, {"post_op_beta", floats_attr(beta)}};
}

TEST_P(CpuMklMatMul, TakesTheMklPathAndMatchesReference) {
  SKIP_UNLESS_MKL_PATH();
  const MklCase& c = GetParam();
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("a", c.a), g.constant(random_tensor(c.b, 2))};
  std::vector<Tensor> inputs{random_tensor(c.a, 1)};
  if (c.has_bias) ins.push_back(g.constant(random_tensor(c.bias, 3)));
  std::vector<int64_t> yd(c.a.begin(), c.a.end() - 1);
  yd.push_back(c.bias.empty() ? c.b.back() : c.bias.back());
  if (c.with_z) {
    if (!c.has_bias) ins.push_back(nullptr);
    ins.push_back(g.input("z", yd));
    inputs.push_back(random_tensor(yd, 4));
  }
  const bool fused = c.op == "FusedMatMul";
  g.output(g.node(c.op, ins, c.attrs, fused ? 1 : 13, fused ? "com.ferry" : ""));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name().rfind("cpu:mkl:sgemm_packed", 0), 0u) << (*k)->name();
  auto cpu = run_graph(graph, "cpu", inputs);
  auto ref = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Linear, CpuMklMatMul,
    ::testing::Values(
        MklCase{"plain", "MatMul", {40, 512}, {512, 520}, {}, false, {}},
        MklCase{"folded_batch", "MatMul", {2, 20, 512}, {512, 512}, {}, false, {}},
        MklCase{"bias_gelu", "FusedMatMul", {2, 20, 512}, {512, 544}, {544}, true, post_ops({"Gelu"}, {0}, {0})},
        MklCase{"relu_no_bias", "FusedMatMul", {30, 512}, {512, 512}, {}, false, post_ops({"Relu"}, {0}, {0})},
        MklCase{"bias_residual", "FusedMatMul", {2, 20, 512}, {512, 512}, {512}, true, post_ops({"sum"}, {0}, {0}), true},
        MklCase{"residual_then_relu_no_bias", "FusedMatMul", {24, 512}, {512, 512}, {}, false,
                post_ops({"sum", "Relu"}, {0, 0}, {0, 0}), true},
        MklCase{"trans_b_silu_mul", "FusedMatMul", {20, 600}, {530, 600}, {530}, true,
                post_ops({"Silu", "Mul"}, {0, 0.5f}, {0, 0}, 1)},
        MklCase{"gemm_trans_b_beta", "Gemm", {20, 512}, {600, 512}, {600}, true,
                {{"transB", int_attr(1)}, {"beta", float_attr(0.5f)}}}),
    [](const ::testing::TestParamInfo<MklCase>& i) { return i.param.name; });

// One executor, two batch sizes: the pack adopted as B's initializer serves both, and the adopted
// initializer still reads back as the original weights.
TEST(CpuMklMatMul, AdoptedPackServesEveryBatchAndUnpacksExactly) {
  SKIP_UNLESS_MKL_PATH();
  GraphBuilder g;
  Tensor w = random_tensor({512, 640}, 5);
  ir::Value* wv = g.constant(w);
  g.output(g.node("MatMul", {g.dynamic_input("a", {32, 512}), wv}, {}, 13));
  ir::Graph& graph = g.finish();
  auto cpu_backend = make_backend("cpu");
  runtime::Executor ex(std::move(cpu_backend).value());
  ASSERT_TRUE(ex.prepare(graph).ok());
  for (int64_t rows : {32, 48, 20}) {
    Tensor a = random_tensor({rows, 512}, 6 + rows);
    runtime::Scope scope;
    scope.values[graph.inputs[0]] = a;
    ASSERT_TRUE(ex.run_graph(graph, scope, nullptr).ok());
    auto want = run_graph(graph, "reference", {a});
    ASSERT_TRUE(want.ok());
    auto got = scope.values[graph.outputs[0]].tensor.plain();
    ASSERT_TRUE(got.ok());
    expect_close(*got, (*want)[0], 1e-4f, "rows " + std::to_string(rows));
  }
  EXPECT_EQ(ex.main_plan()->kernels[0]->name(), "cpu:mkl:sgemm_packed");
  if (!wv->initializer.is_plain()) {  // adopted (dynamic shapes plan lazily: it may stay plain)
    auto back = wv->initializer.plain();
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(bitwise_equal(*back, w));
  }
}

TEST(CpuMklMatMul, NonFiniteWeightsStayOnOneDnn) {
  SKIP_UNLESS_MKL_PATH();
  GraphBuilder g;
  Tensor w = random_tensor({512, 512}, 5);
  w.data<float>()[7] = std::numeric_limits<float>::infinity();
  g.output(g.node("MatMul", {g.input("a", {32, 512}), g.constant(w)}, {}, 13));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)->name().rfind("cpu:onednn:matmul:", 0), 0u) << (*k)->name();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
