// The cpu backend's Concat against the reference backend, with inputs in every layout the convolutions
// hand on (plain graph inputs, channels-last from brgconv or jit 1x1 kernels, channel blocks from Winograd
// or AVX2 kernels) and readers that keep its output in a layout (Relu, then a 1x1 Conv) or not (a graph
// output). The copy is exact; the convolutions around it are compared at fp32 tolerance. The same for
// com.ferry FusedBatchNorm, the concatenation with a per-channel affine map and activations.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {
namespace {

ir::Value* conv(GraphBuilder& b, ir::Value* x, int64_t in_ch, int64_t out_ch, int64_t k, uint32_t seed) {
  Attrs a;
  if (k == 3) a["pads"] = ints_attr({1, 1, 1, 1});
  return b.node("Conv", {x, b.constant(random_tensor({out_ch, in_ch, k, k}, seed)), b.constant(random_tensor({out_ch}, seed + 1))},
                a);
}

// The cpu backend takes every `op` node of g, and g's output on random x matches the reference backend's.
void expect_cpu_runs_it(ir::Graph& g, const std::string& op, const std::vector<int64_t>& x, const std::string& name,
                        float tol = 1e-4f) {
  auto backend = make_backend("cpu");
  for (const auto& n : g.nodes)
    if (n->op_type == op) {
      EXPECT_TRUE((*backend)->supports(*n)) << name;
    }
  Tensor xt = random_tensor(x, 9);
  auto got = run_graph(g, "cpu", {xt});
  auto want = run_graph(g, "reference", {xt});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], tol, name);
}

struct LayoutCase {
  std::string name;
  std::vector<int64_t> x;
  int64_t ch_1x1, ch_3x3;  // channels of the two convolutions concatenated with x
  bool read_blocked;       // a Relu and a Conv read the concatenation (else it is a graph output)
};

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

class CpuConcatLayouts : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(CpuConcatLayouts, MatchesReference) {
  const LayoutCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.input("x", c.x);
  ir::Value* c1 = conv(b, x, c.x[1], c.ch_1x1, 1, 3);
  ir::Value* c3 = conv(b, x, c.x[1], c.ch_3x3, 3, 5);
  ir::Value* cat = b.node("Concat", {c1, x, c3}, {{"axis", int_attr(1)}}, 13);
  const int64_t cat_ch = c.ch_1x1 + c.x[1] + c.ch_3x3;
  b.output(c.read_blocked ? conv(b, b.node("Relu", {cat}), cat_ch, 16, 1, 7) : cat);
  expect_cpu_runs_it(b.finish(), "Concat", c.x, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Concat, CpuConcatLayouts,
    ::testing::Values(
        // DenseNet's shape: the largest input (x) plain, a 1x1 result channels-last, a Winograd-sized 3x3 one.
        LayoutCase{"densenet_like", {1, 64, 24, 24}, 32, 64, true},
        LayoutCase{"densenet_like_batch2", {2, 64, 22, 22}, 32, 64, true},
        // Channel counts that are no whole number of 16- or 8-channel blocks: a plain output.
        LayoutCase{"odd_channels", {1, 20, 9, 9}, 13, 7, true},
        LayoutCase{"largest_is_a_conv", {1, 16, 10, 10}, 48, 32, true},
        LayoutCase{"graph_output", {2, 32, 8, 8}, 16, 32, false}),
    [](const ::testing::TestParamInfo<LayoutCase>& i) { return i.param.name; });

struct PlainCase {
  std::string name;
  std::vector<std::vector<int64_t>> xs;
  int64_t axis;
};

void PrintTo(const PlainCase& c, std::ostream* os) { *os << c.name; }

class CpuConcatPlain : public ::testing::TestWithParam<PlainCase> {};

TEST_P(CpuConcatPlain, MatchesReferenceExactly) {
  const PlainCase& c = GetParam();
  GraphBuilder b;
  std::vector<ir::Value*> ins;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < c.xs.size(); ++i) {
    ins.push_back(b.input("x" + std::to_string(i), c.xs[i]));
    feeds.push_back(random_tensor(c.xs[i], 20 + static_cast<uint32_t>(i)));
  }
  b.output(b.node("Concat", ins, {{"axis", int_attr(c.axis)}}, 13));
  ir::Graph& g = b.finish();
  auto got = run_graph(g, "cpu", feeds);
  auto want = run_graph(g, "reference", feeds);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 0.f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Concat, CpuConcatPlain,
    ::testing::Values(PlainCase{"axis0", {{2, 3, 4}, {5, 3, 4}}, 0},
                      PlainCase{"last_axis_kv_cache", {{1, 4, 7, 16}, {1, 4, 1, 16}}, 2},
                      PlainCase{"negative_axis", {{3, 5}, {3, 2}, {3, 1}}, -1},
                      PlainCase{"empty_input", {{2, 0, 3}, {2, 4, 3}}, 1},
                      PlainCase{"large_runs", {{1, 40, 64, 64}, {1, 24, 64, 64}}, 1}),
    [](const ::testing::TestParamInfo<PlainCase>& i) { return i.param.name; });

// com.ferry FusedBatchNorm on the same inputs: the concatenation through a per-channel scale and shift
// and an activation chain, in every layout, against the reference kernel.
struct NormCase {
  std::string name;
  std::vector<int64_t> x;
  int64_t ch_1x1, ch_3x3;               // 0: that convolution is not an input
  std::vector<std::string> post;        // post_ops
  std::vector<float> alpha, beta;
  float tol = 1e-4f;  // the convolutions around the kernel sum K terms in their own order
};

void PrintTo(const NormCase& c, std::ostream* os) { *os << c.name; }

class CpuFusedBatchNorm : public ::testing::TestWithParam<NormCase> {};

TEST_P(CpuFusedBatchNorm, MatchesReference) {
  const NormCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.input("x", c.x);
  std::vector<ir::Value*> ins;
  if (c.ch_1x1) ins.push_back(conv(b, x, c.x[1], c.ch_1x1, 1, 3));
  ins.push_back(x);
  if (c.ch_3x3) ins.push_back(conv(b, x, c.x[1], c.ch_3x3, 3, 5));
  const int64_t ch = c.x[1] + c.ch_1x1 + c.ch_3x3;
  Tensor scale = random_tensor({ch}, 31), shift = random_tensor({ch}, 32);
  Attrs a{{"axis", int_attr(1)},
          {"bn_scale", floats_attr(std::vector<float>(scale.data<float>(), scale.data<float>() + ch))},
          {"bn_shift", floats_attr(std::vector<float>(shift.data<float>(), shift.data<float>() + ch))}};
  if (!c.post.empty()) {
    a["post_ops"] = strings_attr(c.post);
    a["post_op_alpha"] = floats_attr(c.alpha);
    a["post_op_beta"] = floats_attr(c.beta);
  }
  ir::Value* y = b.node("FusedBatchNorm", ins, a, 1, "com.ferry");
  // Read by a 1x1 conv (the output may stay in a layout) where the rank allows, else a graph output.
  b.output(c.x.size() == 4 ? conv(b, y, ch, 8, 1, 7) : y);
  expect_cpu_runs_it(b.finish(), "FusedBatchNorm", c.x, c.name, c.tol);
}

INSTANTIATE_TEST_SUITE_P(
    FusedBatchNorm, CpuFusedBatchNorm,
    ::testing::Values(NormCase{"densenet_like_relu", {1, 64, 24, 24}, 32, 64, {"Relu"}, {0.f}, {0.f}},
                      NormCase{"batch2_leaky_then_clip", {2, 32, 10, 10}, 16, 32, {"LeakyRelu", "Clip"}, {0.1f, -0.5f},
                               {0.f, 0.75f}},
                      NormCase{"odd_channels_plain", {1, 20, 9, 9}, 13, 7, {"Relu"}, {0.f}, {0.f}},
                      NormCase{"single_input_no_activation", {1, 16, 7, 7}, 0, 0, {}, {}, {}},
                      NormCase{"rank2", {5, 40}, 0, 0, {"Relu"}, {0.f}, {0.f}},
                      // plain runs of 24 x 5184 floats: cut into pieces inside a channel, two threads
                      NormCase{"long_plain_runs", {1, 24, 72, 72}, 0, 0, {"Relu"}, {0.f}, {0.f}},
                      // pieces of two pixels each over three inputs (a row of 7200 channels); the 1x1
                      // convolution reading them sums 7200 terms (9e-4 apart from the reference at AVX2)
                      NormCase{"wide_rows", {1, 1200, 3, 3}, 3000, 3000, {"LeakyRelu"}, {0.2f}, {0.f}, 2e-3f},
                      NormCase{"rank3", {2, 24, 17}, 0, 0, {"Clip"}, {-0.2f}, {0.3f}},
                      // a Winograd 3x3 convolution's channel-blocked result (nChw16c, nChw8c under AVX2)
                      // as the output layout, 23x23 pixels: pieces that start and end inside a pixel
                      NormCase{"channel_blocked_odd_pixels", {2, 64, 23, 23}, 0, 64, {"Relu"}, {0.f}, {0.f}}),
    [](const ::testing::TestParamInfo<NormCase>& i) { return i.param.name; });

TEST(CpuConcat, MismatchedDimsAreAnError) {
  GraphBuilder b;
  ir::Value* y = b.node("Concat", {b.input("a", {2, 3}), b.input("b", {3, 3})}, {{"axis", int_attr(1)}}, 13);
  y->shape = to_shape({2, 6});
  b.output(y);
  auto r = run_graph(b.graph(), "cpu", {random_tensor({2, 3}, 1), random_tensor({3, 3}, 2)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("does not match"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
