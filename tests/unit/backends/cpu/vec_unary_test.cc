// The Highway/SLEEF elementwise kernels against the reference backend: every op on a tensor that is
// large enough to split across threads and ends in a partial vector, special values (inf, nan, ties,
// zeros, huge magnitudes), and the kernel name naming the dispatched ISA.
#include <cmath>
#include <limits>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/vec_math.h"

namespace ferry::backends::cpu::testing {
namespace {

class CpuVecUnary : public ::testing::TestWithParam<std::string> {};

Tensor inputs_for(const std::string& op, int64_t n) {
  Tensor t = random_tensor({n}, 7);
  float* x = t.data<float>();
  const bool positive = op == "Log";
  for (int64_t i = 0; i < n; ++i) {
    x[i] *= (i % 7 == 0) ? 60.f : 4.f;  // some large magnitudes
    if (positive) x[i] = std::fabs(x[i]) + 1e-6f;
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.f, -0.f, 0.5f, 1.5f, 2.5f, -2.5f, 1e-30f, 88.f, -100.f, inf, -inf,
                            std::numeric_limits<float>::quiet_NaN()};
  for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); ++k) x[k] = specials[k];
  return t;
}

TEST_P(CpuVecUnary, MatchesReference) {
  const std::string op = GetParam();
  const int64_t n = (1 << 16) + 13;  // two threads' worth and a partial vector at the end
  GraphBuilder g;
  ir::Value* x = g.input("x", {n});
  g.output(g.node(op, {x}, {}, 13));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*graph.nodes[0])) << op;
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name(), "cpu:vec:" + vec_math_target());
  Tensor in = inputs_for(op, n);
  auto cpu = run_graph(graph, "cpu", {in});
  auto ref = run_graph(graph, "reference", {in});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const float* a = (*cpu)[0].data<float>();
  const float* b = (*ref)[0].data<float>();
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 5; ++i) {
    if (std::isnan(b[i])) {
      if (!std::isnan(a[i])) ADD_FAILURE() << op << "(" << in.data<float>()[i] << "): " << a[i] << " vs NaN", ++bad;
      continue;
    }
    if (std::isinf(b[i])) {
      if (a[i] != b[i]) ADD_FAILURE() << op << "(" << in.data<float>()[i] << "): " << a[i] << " vs " << b[i], ++bad;
      continue;
    }
    // A few ULP relative, or 1e-6 absolute near zero (sin/cos of large arguments, erf near 0).
    if (!(std::fabs(a[i] - b[i]) <= 2e-6f * std::fabs(b[i]) + 1e-6f))
      ADD_FAILURE() << op << "(" << in.data<float>()[i] << "): cpu " << a[i] << " vs reference " << b[i], ++bad;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuVecUnary,
                         ::testing::Values("Log", "Erf", "Sin", "Cos", "Atan", "Softplus", "Softsign", "Reciprocal",
                                           "Floor", "Ceil", "Round"),
                         [](const auto& info) { return info.param; });

TEST(CpuVecUnary, DispatchesToTheBestIsaHere) {
  // This machine has AVX-512 (DESIGN.md); a build that fell back to a narrower target would be slow.
  const std::string t = vec_math_target();
  EXPECT_FALSE(t.empty());
  EXPECT_NE(t.find("AVX"), std::string::npos) << t;
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
