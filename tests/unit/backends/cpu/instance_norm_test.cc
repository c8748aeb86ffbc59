// The cpu backend's InstanceNormalization (instance_norm.cc) against the reference backend: torch's
// GroupNorm export ([N, groups, -1]), images, a constant row, a large mean, and the reference's error for
// a scale of the wrong size.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {
namespace {

struct NCase {
  std::string name;
  std::vector<int64_t> x;
  float offset;   // added to every input element (a mean far from 0)
  float epsilon;  // 0: the attribute is absent (1e-5)
};

class CpuInstanceNormCases : public ::testing::TestWithParam<NCase> {};

TEST_P(CpuInstanceNormCases, MatchesReference) {
  const NCase& c = GetParam();
  GraphBuilder g;
  const int64_t channels = c.x[1];
  Attrs a;
  if (c.epsilon > 0) a["epsilon"] = float_attr(c.epsilon);
  g.output(g.node("InstanceNormalization",
                  {g.input("x", c.x), g.constant(random_tensor({channels}, 11)), g.constant(random_tensor({channels}, 12))},
                  a, 6));
  Tensor x = random_tensor(c.x, 13);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += c.offset;
  expect_cpu_matches_reference(g.finish(), {x}, 1e-5f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    InstanceNorm, CpuInstanceNormCases,
    ::testing::Values(NCase{"group_norm_export", {2, 32, 8 * 40 * 40}, 0.f, 0.f},
                      NCase{"image", {1, 3, 17, 23}, 0.f, 1e-3f}, NCase{"volume", {2, 4, 3, 5, 6}, 0.f, 0.f},
                      NCase{"single_element_rows", {3, 5, 1}, 0.f, 0.f}, NCase{"rank2", {4, 6}, 0.f, 0.f},
                      NCase{"large_mean", {2, 8, 4096}, 1000.f, 0.f}),
    [](const ::testing::TestParamInfo<NCase>& i) { return i.param.name; });

TEST(CpuInstanceNorm, ScaleOfTheWrongSizeIsTheReferenceError) {
  GraphBuilder g;
  g.output(g.node("InstanceNormalization",
                  {g.input("x", {1, 4, 9}), g.constant(random_tensor({3}, 1)), g.constant(random_tensor({4}, 2))}, {}, 6));
  ir::Graph& graph = g.finish();
  auto r = run_graph(graph, "cpu", {random_tensor({1, 4, 9}, 3)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("need 4 elements"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
