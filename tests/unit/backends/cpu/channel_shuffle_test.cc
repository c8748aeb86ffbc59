// The cpu backend's com.ferry ChannelShuffle and channels-last Slice against the reference backend, in
// the layouts a ShuffleNet unit hands them: a plain graph input, a convolution's channels-last or
// channel-blocked output (the AVX2 cap gives nChw8c), with readers that keep a layout (Slice, Conv,
// Concat) or a graph output. Copies are exact; the convolutions around them are compared at fp32
// tolerance.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {
namespace {

ir::Value* conv1x1(GraphBuilder& b, ir::Value* x, int64_t in_ch, int64_t out_ch, uint32_t seed) {
  return b.node("Conv", {x, b.constant(random_tensor({out_ch, in_ch, 1, 1}, seed)), b.constant(random_tensor({out_ch}, seed + 1))});
}

ir::Value* shuffle(GraphBuilder& b, ir::Value* x, int64_t groups) {
  return b.node("ChannelShuffle", {x}, {{"groups", int_attr(groups)}}, 1, "com.ferry");
}

ir::Value* slice_channels(GraphBuilder& b, ir::Value* x, int64_t from, int64_t to) {
  return b.node("Slice", {x, b.constant(Tensor::from_vector<int64_t>({from}, {1})), b.constant(Tensor::from_vector<int64_t>({to}, {1})),
                          b.constant(Tensor::from_vector<int64_t>({1}, {1}))},
                {}, 13);
}

void expect_matches_reference(ir::Graph& g, const std::vector<int64_t>& x, const std::string& name) {
  auto backend = make_backend("cpu");
  for (const auto& n : g.nodes)
    if (n->op_type == "ChannelShuffle" || n->op_type == "Slice") {
      EXPECT_TRUE((*backend)->supports(*n)) << name << ": " << n->op_type;
    }
  Tensor xt = random_tensor(x, 9);
  auto got = run_graph(g, "cpu", {xt});
  auto want = run_graph(g, "reference", {xt});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) expect_close((*got)[i], (*want)[i], 1e-4f, name + " output " + std::to_string(i));
}

// A ShuffleNet V2 unit: concat(x1, branch(x2)) -> shuffle -> chunk(2) -> the next unit's branch.
TEST(CpuChannelShuffle, ShuffleNetUnitMatchesReference) {
  for (int64_t c : {48, 116, 20}) {
    GraphBuilder b;
    const std::vector<int64_t> xd{2, c, 7, 9};
    ir::Value* x = b.input("x", xd);
    ir::Value* y = conv1x1(b, x, c, c, 3);  // channels-last or blocked, per ISA
    ir::Value* x1 = slice_channels(b, y, 0, c / 2);
    ir::Value* x2 = slice_channels(b, y, c / 2, c);
    ir::Value* br = b.node("Relu", {conv1x1(b, x2, c / 2, c / 2, 5)});
    ir::Value* cat = b.node("Concat", {x1, br}, {{"axis", int_attr(1)}}, 13);
    ir::Value* sh = shuffle(b, cat, 2);
    ir::Value* next = conv1x1(b, slice_channels(b, sh, c / 2, c), c / 2, 8, 7);
    b.output(next);
    b.output(slice_channels(b, sh, 0, c / 2));  // a graph output: plain
    expect_matches_reference(b.finish(), xd, "unit c=" + std::to_string(c));
  }
}

TEST(CpuChannelShuffle, EveryLayoutAndGroupCount) {
  for (int64_t groups : {1, 2, 3, 4}) {
    for (bool from_conv : {false, true}) {
      GraphBuilder b;
      const std::vector<int64_t> xd{1, 24, 5, 6};
      ir::Value* x = b.input("x", xd);
      ir::Value* in = from_conv ? conv1x1(b, x, 24, 24, 11) : x;
      ir::Value* sh = shuffle(b, in, groups);
      b.output(conv1x1(b, sh, 24, 16, 13));  // a reader that keeps layouts
      b.output(shuffle(b, in, groups));       // and a graph output
      expect_matches_reference(b.finish(), xd, "groups " + std::to_string(groups) + (from_conv ? " from a conv" : " plain"));
    }
  }
  GraphBuilder b;  // rank 3 and rank 5 plain tensors
  ir::Value* x3 = b.input("x", {2, 6, 10});
  b.output(shuffle(b, x3, 3));
  expect_matches_reference(b.finish(), {2, 6, 10}, "rank 3");
}

// A Slice of a channels-last tensor along another axis (or with a step) reads it plain.
TEST(CpuChannelShuffle, OtherSlicesOfChannelsLastInputs) {
  GraphBuilder b;
  const std::vector<int64_t> xd{1, 32, 6, 6};
  ir::Value* x = b.input("x", xd);
  ir::Value* y = conv1x1(b, x, 32, 32, 17);
  auto ints = [&](std::vector<int64_t> v) { return b.constant(Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())})); };
  ir::Value* rows = b.node("Slice", {y, ints({1}), ints({5}), ints({2})}, {}, 13);
  ir::Value* stepped = b.node("Slice", {y, ints({0}), ints({32}), ints({1}), ints({2})}, {}, 13);
  b.output(conv1x1(b, rows, 32, 8, 19));
  b.output(conv1x1(b, stepped, 16, 8, 21));
  expect_matches_reference(b.finish(), xd, "other slices");
}

TEST(CpuChannelShuffle, ChannelsThatDoNotSplitAreAnError) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {1, 6, 2, 2});
  ir::Value* y = shuffle(b, x, 4);
  y->shape = to_shape({1, 6, 2, 2});
  b.output(y);
  auto r = run_graph(b.graph(), "cpu", {random_tensor({1, 6, 2, 2}, 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("groups"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
