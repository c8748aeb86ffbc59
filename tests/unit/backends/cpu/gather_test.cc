// The cpu backend's Gather of one constant index (gather.cc): Swin's q/k/v split after the head
// transpose hands on blocks of the transposed tensor without copying them, inside the memory plan and as
// a graph output; other axes copy; every case matches the reference backend exactly.
#include "unit/backends/cpu/conv_test_util.h"

#include <map>

#include "backends/cpu/cpu_backend.h"
#include "runtime/executor.h"
#include "runtime/session.h"

namespace ferry::backends::cpu::testing {
namespace {

// Swin's window attention (torchvision), reduced: qkv [windows, tokens, 3, heads, dim] to
// [3, windows, heads, tokens, dim], then qkv[0], qkv[1], qkv[2]; the q block is also a graph output.
const char* kQkvSplit = R"(opset "" 17
graph g (%x: float32[4,6,24])
  const %shape: int64[5] = [4, 6, 3, 2, 4]
  const %i0: int64[] = [0]
  const %i1: int64[] = [1]
  const %i2: int64[] = [-1]
  %r = Reshape(%x, %shape)  # split
  %t = Transpose(%r) {perm=[2,0,3,1,4]}  # heads
  %q = Gather(%t, %i0) {axis=0}  # q
  %k = Gather(%t, %i1) {axis=0}  # k
  %v = Gather(%t, %i2) {axis=0}  # v
  %qk = Mul(%q, %k)  # qk
  %y = Add(%qk, %v)  # out
  return %y, %q
)";

std::unique_ptr<runtime::Session> open(const std::string& backend) {
  auto m = ir::parse_model(kQkvSplit);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  runtime::SessionOptions so;
  so.backend = backend;
  so.opt_level = 2;
  auto s = runtime::Session::from_model(std::move(m).value(), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(CpuGather, QkvSplitViewsTheTransposedTensor) {
  auto cpu = open("cpu"), ref = open("reference");
  ASSERT_TRUE(cpu && ref);
  const Tensor x = random_tensor({4, 6, 24}, 7);
  // Where each Gather's output starts, in elements from its input's first.
  std::map<std::string, int64_t> offset;
  cpu->set_node_hook(
      [&](const ir::Node& node, const std::vector<const RtValue*>& inputs, const std::vector<RtValue>& outputs) {
        if (node.op_type != "Gather") return;
        offset[node.name] = (static_cast<const float*>(outputs[0].tensor.raw()) -
                             static_cast<const float*>(inputs[0]->tensor.raw()));
      },
      runtime::HookMode::kObserve);
  for (int run = 0; run < 2; ++run) {  // the second run uses the refined memory plan
    auto got = cpu->run_tensors({{"x", x}});
    auto want = ref->run_tensors({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_EQ(got->size(), 2u);
    for (size_t i = 0; i < 2; ++i) expect_close((*got)[i].second, (*want)[i].second, 0.f, (*got)[i].first);
  }
  EXPECT_TRUE(cpu->executor().plan_refined());
  EXPECT_EQ(cpu->executor().dropped_values(), 0);
  // k and v are views of the transposed tensor; q, a graph output, was copied out of the arena (as every
  // graph output that points into it is) before the hook saw it.
  const int64_t block = 4 * 2 * 6 * 4;
  EXPECT_EQ(offset["k"], block);
  EXPECT_EQ(offset["v"], 2 * block);
}

struct GCase {
  std::string name;
  std::vector<int64_t> x;
  int64_t axis, index;
  bool scalar_index;  // rank-0 indices; else [1]
};

class CpuGatherCases : public ::testing::TestWithParam<GCase> {};

TEST_P(CpuGatherCases, MatchesReference) {
  const GCase& c = GetParam();
  GraphBuilder g;
  Tensor idx(DType::kInt64, c.scalar_index ? std::vector<int64_t>{} : std::vector<int64_t>{1});
  idx.data<int64_t>()[0] = c.index;
  g.output(g.node("Gather", {g.input("x", c.x), g.constant(idx)}, {{"axis", int_attr(c.axis)}}, 13));
  expect_cpu_matches_reference(g.finish(), {random_tensor(c.x, 5)}, 0.f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Gather, CpuGatherCases,
    ::testing::Values(GCase{"axis0_scalar", {3, 5, 4}, 0, 1, true}, GCase{"axis0_negative", {3, 5, 4}, 0, -3, true},
                      GCase{"axis1_copies", {3, 5, 4}, 1, 2, true}, GCase{"axis1_kept", {3, 5, 4}, 1, -1, false},
                      GCase{"last_axis", {2, 3, 70000}, 2, 69999, true},
                      GCase{"outer_one_axis2", {1, 1, 6, 9}, 2, 4, true}, GCase{"rank1", {11}, 0, 10, true},
                      GCase{"big_copy", {64, 3, 700}, 1, 1, true}),
    [](const ::testing::TestParamInfo<GCase>& i) { return i.param.name; });

TEST(CpuGather, OutOfRangeIndexIsTheReferenceError) {
  GraphBuilder g;
  g.output(g.node("Gather", {g.input("x", {3, 4}), g.constant(Tensor::scalar<int64_t>(3))}, {{"axis", int_attr(0)}}, 13));
  ir::Graph& graph = g.finish();
  auto r = run_graph(graph, "cpu", {random_tensor({3, 4}, 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("out of range"), std::string::npos) << r.status().to_string();
}

TEST(CpuGather, IntegerDataAndRuntimeIndices) {
  // A shape's element (int64 data) takes the view; indices that are not constants stay on the reference.
  GraphBuilder g;
  Tensor shape(DType::kInt64, {4});
  for (int i = 0; i < 4; ++i) shape.data<int64_t>()[i] = 10 * (i + 1);
  ir::Value* s = g.constant(shape);
  g.output(g.node("Gather", {s, g.constant(Tensor::scalar<int64_t>(2))}, {{"axis", int_attr(0)}}, 13));
  ir::Value* ids = g.input("ids", {2});
  ids->dtype = DType::kInt64;
  g.output(g.node("Gather", {g.input("table", {5, 3}), ids}, {{"axis", int_attr(0)}}, 13));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  EXPECT_TRUE((*backend)->supports(*graph.nodes[0]));
  EXPECT_FALSE((*backend)->supports(*graph.nodes[1]));
  Tensor idv(DType::kInt64, {2});
  idv.data<int64_t>()[0] = 4;
  idv.data<int64_t>()[1] = 0;
  const Tensor table = random_tensor({5, 3}, 2);
  auto cpu = run_graph(graph, "cpu", {idv, table});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ((*cpu)[0].dtype(), DType::kInt64);
  EXPECT_EQ((*cpu)[0].data<int64_t>()[0], 30);
  EXPECT_EQ((*cpu)[1].data<float>()[0], table.data<float>()[12]);
  EXPECT_EQ((*cpu)[1].data<float>()[5], table.data<float>()[2]);
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
