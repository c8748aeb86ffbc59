// The cpu backend's reductions over adjacent axes (ReduceL2 / SumSquare / Sum / Mean) against the
// reference backend, and the shapes it leaves to the reference kernel.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"
#include "runtime/executor.h"

namespace ferry::backends::cpu::testing {
namespace {

struct RCase {
  std::string name, op;
  std::vector<int64_t> x, axes;
  int64_t keepdims = 1;
  bool cpu = true;  // the cpu backend takes it
};

void PrintTo(const RCase& c, std::ostream* os) { *os << c.name; }

class CpuReduceCases : public ::testing::TestWithParam<RCase> {};

TEST_P(CpuReduceCases, MatchesReference) {
  const RCase& c = GetParam();
  GraphBuilder b;
  b.output(b.node(c.op, {b.input("x", c.x)}, {{"axes", ints_attr(c.axes)}, {"keepdims", int_attr(c.keepdims)}}, 11));
  ir::Graph& g = b.finish();
  auto backend = make_backend("cpu");
  EXPECT_EQ((*backend)->supports(*g.nodes[0]), c.cpu) << c.name;
  Tensor x = random_tensor(c.x, 5);
  auto got = run_graph(g, "cpu", {x});
  auto want = run_graph(g, "reference", {x});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 1e-5f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Reduce, CpuReduceCases,
    ::testing::Values(RCase{"l2_last", "ReduceL2", {2, 3, 49, 32}, {-1}},
                      RCase{"sumsquare_two_last", "ReduceSumSquare", {2, 3, 4, 5}, {2, 3}},
                      RCase{"sum_last_with_size1_between", "ReduceSum", {4, 1, 300}, {1, 2}},
                      RCase{"mean_long_rows", "ReduceMean", {3, 5000}, {1}},
                      RCase{"mean_all", "ReduceMean", {3, 4, 5}, {0, 1, 2}},
                      // mnasnet's x.mean([2, 3]) (keepdims 0), and the axes given unsorted and negative.
                      RCase{"mean_spatial_no_keepdims", "ReduceMean", {1, 64, 7, 7}, {2, 3}, 0},
                      RCase{"l2_negative_axes", "ReduceL2", {2, 6, 5}, {-1, -2}, 0},
                      // Axes followed by others: summed over the middle in slices of the tail (SSD's
                      // L2Norm over the channels; a tail of 2100 = 9 slices; only a size-1 axis).
                      RCase{"leading_axis", "ReduceSum", {3, 4, 5}, {0}},
                      RCase{"l2_channels", "ReduceL2", {2, 64, 9, 11}, {1}},
                      RCase{"mean_middle_two", "ReduceMean", {2, 3, 4, 5, 6}, {1, 2}},
                      RCase{"sumsquare_leading_long_tail", "ReduceSumSquare", {4, 7, 300}, {0}, 0},
                      RCase{"l2_size1_axis_only", "ReduceL2", {2, 1, 5}, {1}},
                      // Left to the reference kernel: a gap between axes.
                      RCase{"gap", "ReduceL2", {3, 4, 5}, {0, 2}, 1, false}),
    [](const ::testing::TestParamInfo<RCase>& i) { return i.param.name; });

// A conv's result in the layout the conv wrote (nhwc or nChw16c: the hook observes without making it
// plain), read by ReduceMean over the spatial axes as it is (mnasnet's x.mean([2, 3]) after its last 1x1
// conv) and by ReduceSum, which makes it plain first; both against the reference.
TEST(CpuReduce, SpatialReductionsReadTheConvLayout) {
  for (const char* op : {"ReduceMean", "ReduceSum"}) {
    for (const std::vector<int64_t>& w : {std::vector<int64_t>{40, 24, 1, 1}, std::vector<int64_t>{40, 24, 3, 3}}) {
      GraphBuilder b;
      ir::Value* x = b.input("x", {2, 24, 7, 7});
      ir::Value* c = b.node("Conv", {x, b.constant(random_tensor(w, 1)), b.constant(random_tensor({40}, 2))},
                            {{"pads", ints_attr(w[2] == 3 ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{0, 0, 0, 0})}});
      b.output(b.node(op, {c}, {{"axes", ints_attr({2, 3})}, {"keepdims", int_attr(0)}}, 11));
      ir::Graph& g = b.finish();
      auto backend = make_backend("cpu");
      ASSERT_TRUE(backend.ok());
      runtime::Executor ex(std::move(backend).value());
      ASSERT_TRUE(ex.prepare(g).ok());
      runtime::Scope scope;
      const Tensor xt = random_tensor({2, 24, 7, 7}, 3);
      scope.values[g.inputs[0]] = xt;
      bool conv_blocked = false;
      runtime::NodeHook hook = [&](const ir::Node& n, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
        if (n.op_type == "Conv") conv_blocked = !outs[0].tensor.is_plain();
      };
      ASSERT_TRUE(ex.run_graph(g, scope, &hook, runtime::HookMode::kObserve).ok());
      auto want = run_graph(g, "reference", {xt});
      ASSERT_TRUE(want.ok());
      EXPECT_TRUE(conv_blocked) << op << ": the conv's result was made plain for the reduction";
      expect_close(scope.values.at(g.outputs[0]).tensor, (*want)[0], 1e-4f, op);
    }
  }
}

// ReduceL2 over the channels of a conv's channels-last result (SSD's L2Norm after conv4_3) reads each
// pixel's channels as a row, without making the tensor plain; against the reference.
TEST(CpuReduce, ChannelReductionReadsTheConvLayout) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {2, 24, 9, 7});
  ir::Value* c = b.node("Conv", {x, b.constant(random_tensor({64, 24, 1, 1}, 1)), b.constant(random_tensor({64}, 2))}, {});
  b.output(b.node("ReduceL2", {c}, {{"axes", ints_attr({1})}, {"keepdims", int_attr(1)}}, 11));
  ir::Graph& g = b.finish();
  const Tensor xt = random_tensor({2, 24, 9, 7}, 3);
  auto got = run_graph(g, "cpu", {xt});
  auto want = run_graph(g, "reference", {xt});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 1e-4f, "ReduceL2 over the conv's channels");
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
