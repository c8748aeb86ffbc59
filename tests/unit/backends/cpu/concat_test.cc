// The cpu backend's Concat (oneDNN concat in the inputs' layout) against the reference: convolution
// outputs concatenated along channels and read by another convolution (the result stays blocked, as in
// a DenseNet), plain inputs along every axis, mixed layouts, and an empty input.
#include <gtest/gtest.h>

#include "unit/backends/cpu/conv_test_util.h"

namespace ferry::backends::cpu::testing {
namespace {

ir::Value* conv1x1(GraphBuilder& g, ir::Value* x, int64_t cin, int64_t cout, uint64_t seed) {
  return g.node("Conv", {x, g.constant(random_tensor({cout, cin, 1, 1}, seed)), g.constant(random_tensor({cout}, seed + 1))});
}

void check(ir::Graph& graph, const std::vector<Tensor>& inputs, const std::string& what) {
  auto backend = make_backend("cpu");
  for (const auto& n : graph.nodes)
    if (n->op_type == "Concat") {
      ASSERT_TRUE((*backend)->supports(*n)) << what;
    }
  auto cpu = run_graph(graph, "cpu", inputs);
  auto ref = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << what << ": " << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << what << ": " << ref.status().to_string();
  for (size_t i = 0; i < cpu->size(); ++i) expect_close((*cpu)[i], (*ref)[i], 1e-4f, what);
}

TEST(CpuConcat, DenseNetStyleBlockedChain) {
  GraphBuilder g;
  ir::Value* x = g.input("x", {1, 16, 12, 12});
  ir::Value* feats = x;
  int64_t c = 16;
  for (int layer = 0; layer < 3; ++layer) {
    ir::Value* f = g.node("Relu", {conv1x1(g, feats, c, 32, 10 + layer)});
    feats = g.node("Concat", {feats, f}, {{"axis", int_attr(1)}}, 13);
    c += 32;
  }
  g.output(conv1x1(g, feats, c, 8, 50));
  check(g.finish(), {random_tensor({1, 16, 12, 12}, 1)}, "densenet chain");
}

TEST(CpuConcat, PlainInputsAlongEveryAxis) {
  for (int axis : {0, 1, 2, 3, -1}) {
    GraphBuilder g;
    std::vector<int64_t> a{2, 3, 4, 5}, b = a;
    b[axis < 0 ? 3 : axis] = 2;
    g.output(g.node("Concat", {g.input("a", a), g.input("b", b), g.input("c", a)}, {{"axis", int_attr(axis)}}, 13));
    check(g.finish(), {random_tensor(a, 1), random_tensor(b, 2), random_tensor(a, 3)}, "axis " + std::to_string(axis));
  }
}

TEST(CpuConcat, MixedLayoutsAndAnEmptyInput) {
  GraphBuilder g;
  ir::Value* x = g.input("x", {1, 8, 6, 6});
  ir::Value* blocked = conv1x1(g, x, 8, 16, 3);
  ir::Value* empty = g.input("e", {1, 0, 6, 6});
  ir::Value* y = g.node("Concat", {blocked, x, empty}, {{"axis", int_attr(1)}}, 13);
  g.output(conv1x1(g, y, 24, 4, 7));
  g.output(y);
  check(g.finish(), {random_tensor({1, 8, 6, 6}, 1), Tensor(DType::kFloat32, {1, 0, 6, 6})}, "mixed");
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
