// The cpu backend's Transpose and Slice (oneDNN reorders) against the reference backend.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {
namespace {

struct TCase {
  std::string name;
  std::vector<int64_t> x, perm;  // perm empty: attribute absent (reverse)
};

class CpuTransposeCases : public ::testing::TestWithParam<TCase> {};

TEST_P(CpuTransposeCases, MatchesReference) {
  const TCase& c = GetParam();
  GraphBuilder g;
  Attrs a;
  if (!c.perm.empty()) a["perm"] = ints_attr(c.perm);
  g.output(g.node("Transpose", {g.input("x", c.x)}, a, 13));
  expect_cpu_matches_reference(g.finish(), {random_tensor(c.x, 3)}, 0.f, c.name);  // a copy: exact
}

INSTANTIATE_TEST_SUITE_P(
    Transpose, CpuTransposeCases,
    ::testing::Values(TCase{"reverse_2d", {7, 13}, {}}, TCase{"heads", {2, 9, 3, 8}, {0, 2, 1, 3}},
                      TCase{"kt", {2, 3, 9, 8}, {0, 1, 3, 2}}, TCase{"rot3", {4, 5, 6}, {2, 0, 1}},
                      TCase{"negative_axes", {4, 5, 6}, {-1, 0, 1}}, TCase{"identity", {3, 4}, {0, 1}},
                      TCase{"rank6", {2, 1, 3, 2, 4, 3}, {5, 3, 1, 0, 2, 4}}, TCase{"rank1", {17}, {}},
                      // maxvit's window departition at its last stage: the last output dim has size 1 and
                      // the one before it is strided (no contiguous runs; a coalesced 3-D reorder), and
                      // unit dims between merged ones.
                      TCase{"unit_inner_strided", {2, 3, 3, 1, 1, 40}, {0, 5, 1, 3, 2, 4}},
                      TCase{"unit_dims_merge", {2, 1, 5, 1, 6, 7}, {0, 5, 1, 2, 3, 4}}),
    [](const ::testing::TestParamInfo<TCase>& i) { return i.param.name; });

TEST(CpuTranspose, BadPermIsAnError) {
  GraphBuilder g;
  ir::Value* y = g.node("Transpose", {g.input("x", {2, 3})}, {{"perm", ints_attr({0, 0})}}, 13);
  y->shape = to_shape({2, 3});
  g.output(y);
  auto r = run_graph(g.graph(), "cpu", {random_tensor({2, 3}, 1)});
  EXPECT_FALSE(r.ok());
}

struct SCase {
  std::string name;
  std::vector<int64_t> x, starts, ends, axes, steps;  // axes / steps empty: input absent
};

class CpuSliceCases : public ::testing::TestWithParam<SCase> {};

Tensor ints(const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

TEST_P(CpuSliceCases, MatchesReference) {
  const SCase& c = GetParam();
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("x", c.x), g.constant(ints(c.starts)), g.constant(ints(c.ends))};
  if (!c.axes.empty() || !c.steps.empty()) ins.push_back(g.constant(ints(c.axes)));
  if (!c.steps.empty()) ins.push_back(g.constant(ints(c.steps)));
  g.output(g.node("Slice", ins, {}, 13));
  expect_cpu_matches_reference(g.finish(), {random_tensor(c.x, 4)}, 0.f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Slice, CpuSliceCases,
    ::testing::Values(SCase{"qkv_split", {5, 2, 24}, {8}, {16}, {-1}, {}}, SCase{"first_axis", {6, 4}, {1}, {5}, {}, {}},
                      SCase{"steps", {7, 9, 4}, {1, 0}, {7, 9}, {0, 1}, {2, 3}},
                      SCase{"negative_and_clamped", {6, 8}, {-4, 2}, {1000, -1}, {0, 1}, {}},
                      SCase{"empty", {6, 8}, {5}, {2}, {0}, {}}, SCase{"negative_step_falls_back", {6, 8}, {5}, {0}, {1}, {-2}}),
    [](const ::testing::TestParamInfo<SCase>& i) { return i.param.name; });

}  // namespace
}  // namespace ferry::backends::cpu::testing
