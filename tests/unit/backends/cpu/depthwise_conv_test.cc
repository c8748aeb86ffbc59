// The cpu backend's own depthwise convolution (depthwise_conv.cc, vec_depthwise.cc) against the
// reference backend (with FERRY_CPU_OWN_DEPTHWISE=1 set here, the kernel being opt-in): the register-reuse path for 3/5/7-wide filters at stride 1 and 2 over widths
// that exercise every pixel-block size and both image edges, the general path (dilation, other
// filter widths), channel tails, more than one channel chunk, batch and the two ways work is split
// over threads, each post-op, and which nodes it must leave to oneDNN.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {
namespace {

// The opt-in kernel, forced on (--cpu-own-depthwise on) for the backends of the tests that test it.
BackendOptions own_depthwise() {
  BackendOptions o;
  o.cpu.own_depthwise = Choice::kOn;
  return o;
}


struct DwCase {
  std::string name;
  std::vector<int64_t> x;       // N, C, H, W
  std::vector<int64_t> kernel;  // kh, kw
  std::vector<int64_t> strides, pads, dilations;
  bool bias = true;
};

void PrintTo(const DwCase& c, std::ostream* os) { *os << c.name; }

// The kernel a node gets on the cpu backend.
std::string kernel_name(const ir::Node& n, const BackendOptions& options = own_depthwise()) {
  auto backend = make_backend("cpu", options);
  auto k = (*backend)->create_kernel(n);
  return k.ok() ? (*k)->name() : "error: " + k.status().to_string();
}

class CpuDepthwiseCases : public ::testing::TestWithParam<DwCase> {};

TEST_P(CpuDepthwiseCases, MatchesReferenceOnOwnKernel) {
  const DwCase& c = GetParam();
  const int64_t ch = c.x[1];
  GraphBuilder b;
  ir::Value* x = b.input("x", c.x);
  std::vector<ir::Value*> ins{x, b.constant(random_tensor({ch, 1, c.kernel[0], c.kernel[1]}, 2))};
  if (c.bias) ins.push_back(b.constant(random_tensor({ch}, 3)));
  Attrs attrs{{"group", int_attr(ch)}};
  if (!c.strides.empty()) attrs["strides"] = ints_attr(c.strides);
  if (!c.pads.empty()) attrs["pads"] = ints_attr(c.pads);
  if (!c.dilations.empty()) attrs["dilations"] = ints_attr(c.dilations);
  b.output(b.node("Conv", ins, attrs));
  ir::Graph& g = b.finish();
  EXPECT_NE(kernel_name(*g.nodes[0]).find("depthwise"), std::string::npos) << kernel_name(*g.nodes[0]);
  Tensor xt = random_tensor(c.x, 1);
  auto cpu = run_graph(g, "cpu", {xt}, nullptr, own_depthwise());
  auto ref = run_graph(g, "reference", {xt});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Depthwise, CpuDepthwiseCases,
    ::testing::Values(
        // Register-reuse path: widths 23 (blocks of 8, 8, 4, 2, 1) and 7 (edge blocks only).
        DwCase{"k3s1_w23", {1, 32, 9, 23}, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        DwCase{"k3s2_w23", {1, 48, 10, 23}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
        DwCase{"k5s1_w7_c1152", {1, 1152, 7, 7}, {5, 5}, {1, 1}, {2, 2, 2, 2}},
        DwCase{"k5s2_w15", {1, 40, 15, 15}, {5, 5}, {2, 2}, {2, 2, 2, 2}},
        DwCase{"k7s1_w30", {1, 96, 12, 30}, {7, 7}, {1, 1}, {3, 3, 3, 3}},
        DwCase{"k7s2_w13", {1, 20, 13, 13}, {7, 7}, {2, 2}, {3, 3, 3, 3}},
        // Channel tails (not a multiple of 16), more than one 128-channel chunk, no bias.
        DwCase{"tail_c13", {1, 13, 11, 11}, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        DwCase{"tail_c150", {1, 150, 9, 12}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, false},
        DwCase{"c1", {1, 1, 6, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        // Pads: none, asymmetric, wider than the image, a map smaller than the filter.
        DwCase{"no_pad", {1, 32, 8, 17}, {3, 3}, {1, 1}, {0, 0, 0, 0}},
        DwCase{"asym_pads", {1, 24, 9, 10}, {3, 3}, {2, 1}, {0, 2, 1, 0}},
        DwCase{"pad_wider_than_image", {1, 16, 2, 3}, {5, 5}, {1, 1}, {4, 4, 4, 4}},
        DwCase{"map_smaller_than_filter", {1, 16, 3, 3}, {7, 7}, {1, 1}, {3, 3, 3, 3}},
        // General path: dilation, a filter width without a fast path, a 1x1 depthwise, stride 3.
        DwCase{"dilation2", {1, 32, 12, 14}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}},
        DwCase{"k3x4", {1, 20, 9, 11}, {3, 4}, {1, 1}, {1, 1, 2, 2}},
        DwCase{"k1x1", {1, 33, 5, 6}, {1, 1}},
        DwCase{"stride3", {1, 16, 13, 13}, {3, 3}, {3, 3}, {1, 1, 1, 1}},
        // Batch (rows split across images) and small maps split over channel ranges.
        DwCase{"batch3", {3, 64, 14, 14}, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        DwCase{"batch2_small_map", {2, 672, 4, 4}, {5, 5}, {1, 1}, {2, 2, 2, 2}},
        DwCase{"big_map", {1, 96, 56, 56}, {3, 3}, {2, 2}, {0, 0, 1, 1}}),
    [](const ::testing::TestParamInfo<DwCase>& i) { return i.param.name; });

// Every post-op the kernel applies, alone and chained, against the unfused reference.
struct DwPostOps {
  std::vector<std::string> ops;
  std::vector<float> alpha, beta;
};

void PrintTo(const DwPostOps& c, std::ostream* os) {
  for (const auto& o : c.ops) *os << o << " ";
}

ir::Value* unfused_op(GraphBuilder& b, const std::string& op, float alpha, float beta, ir::Value* y) {
  if (op == "LeakyRelu") return b.node("LeakyRelu", {y}, {{"alpha", float_attr(alpha)}});
  if (op == "Elu") return b.node("Elu", {y}, {{"alpha", float_attr(alpha)}});
  if (op == "HardSigmoid") return b.node("HardSigmoid", {y}, {{"alpha", float_attr(alpha)}, {"beta", float_attr(beta)}});
  if (op == "Clip") return b.node("Clip", {y, b.constant(Tensor::scalar(alpha)), b.constant(Tensor::scalar(beta))});
  if (op == "Silu") return b.node("Mul", {y, b.node("Sigmoid", {y})});
  if (op == "Mul") return b.node("Mul", {y, b.constant(Tensor::scalar(alpha))});
  if (op == "Add") return b.node("Add", {y, b.constant(Tensor::scalar(alpha))});
  return b.node(op, {y});
}

class CpuDepthwisePostOps : public ::testing::TestWithParam<DwPostOps> {};

TEST_P(CpuDepthwisePostOps, MatchesUnfusedReference) {
  const DwPostOps& c = GetParam();
  // 40 channels: two full vectors and a tail; width 21: fast-path blocks of 8, 8, 4, 1.
  const std::vector<int64_t> xd{2, 40, 9, 21}, wd{40, 1, 3, 3};
  Tensor w = random_tensor(wd, 4), bias = random_tensor({40}, 5);
  // Scaled inputs reach the saturating ranges of Sigmoid/Tanh/Elu.
  Tensor xt = random_tensor(xd, 6);
  for (int64_t i = 0; i < xt.numel(); ++i) xt.data<float>()[i] *= 8.f;
  Attrs conv_attrs{{"group", int_attr(40)}, {"pads", ints_attr({1, 1, 1, 1})}};

  GraphBuilder fused;
  Attrs fa = conv_attrs;
  fa["post_ops"] = strings_attr(c.ops);
  fa["post_op_alpha"] = floats_attr(c.alpha);
  fa["post_op_beta"] = floats_attr(c.beta);
  ir::Value* fy =
      fused.node("FusedConv", {fused.input("x", xd), fused.constant(w), fused.constant(bias)}, fa, 1, "com.ferry");
  fy->shape = to_shape({2, 40, 9, 21});
  fused.output(fy);
  EXPECT_NE(kernel_name(*fused.graph().nodes[0]).find("depthwise"), std::string::npos);

  GraphBuilder ref;
  ir::Value* y = ref.node("Conv", {ref.input("x", xd), ref.constant(w), ref.constant(bias)}, conv_attrs);
  for (size_t i = 0; i < c.ops.size(); ++i) y = unfused_op(ref, c.ops[i], c.alpha[i], c.beta[i], y);
  ref.output(y);

  auto got = run_graph(fused.graph(), "cpu", {xt}, nullptr, own_depthwise());
  auto want = run_graph(ref.finish(), "reference", {xt});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 1e-4f, c.ops[0]);
}

INSTANTIATE_TEST_SUITE_P(
    Depthwise, CpuDepthwisePostOps,
    ::testing::Values(DwPostOps{{"Relu"}, {0}, {0}}, DwPostOps{{"LeakyRelu"}, {0.1f}, {0}},
                      DwPostOps{{"Clip"}, {0.f}, {6.f}}, DwPostOps{{"Sigmoid"}, {0}, {0}}, DwPostOps{{"Silu"}, {0}, {0}},
                      DwPostOps{{"HardSigmoid"}, {0.2f}, {0.5f}}, DwPostOps{{"HardSwish"}, {0}, {0}},
                      DwPostOps{{"Tanh"}, {0}, {0}}, DwPostOps{{"Elu"}, {0.7f}, {0}}, DwPostOps{{"Abs"}, {0}, {0}},
                      DwPostOps{{"Mul"}, {-1.5f}, {0}}, DwPostOps{{"Add"}, {0.25f}, {0}},
                      DwPostOps{{"Clip", "Silu", "Mul"}, {-0.5f, 0, 2.f}, {0.5f, 0, 0}}),
    [](const ::testing::TestParamInfo<DwPostOps>& i) {
      std::string s;
      for (const auto& o : i.param.ops) s += (s.empty() ? "" : "_") + o;
      return s;
    });

// What the kernel leaves to oneDNN: a residual sum, a post-op it lacks, a channel multiplier.
TEST(CpuDepthwise, LeavesUncoveredNodesToOneDnn) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {1, 16, 8, 8});
  ir::Value* z = b.input("z", {1, 16, 8, 8});
  Attrs base{{"group", int_attr(16)}, {"pads", ints_attr({1, 1, 1, 1})}};
  Attrs sum = base;
  sum["post_ops"] = strings_attr({"sum"});
  sum["post_op_alpha"] = floats_attr({0});
  sum["post_op_beta"] = floats_attr({0});
  b.node("FusedConv", {x, b.constant(random_tensor({16, 1, 3, 3}, 1)), b.constant(random_tensor({16}, 2)), z}, sum, 1,
         "com.ferry");
  Attrs gelu = base;
  gelu["post_ops"] = strings_attr({"Gelu"});
  gelu["post_op_alpha"] = floats_attr({0});
  gelu["post_op_beta"] = floats_attr({0});
  b.node("FusedConv", {x, b.constant(random_tensor({16, 1, 3, 3}, 3))}, gelu, 1, "com.ferry");
  b.node("Conv", {x, b.constant(random_tensor({32, 1, 3, 3}, 4))}, base);  // 2 filters per channel
  for (const auto& n : b.graph().nodes) {
    const std::string k = kernel_name(*n);
    EXPECT_EQ(k.find("depthwise"), std::string::npos) << n->label() << " got " << k;
    EXPECT_NE(k.find("onednn"), std::string::npos) << n->label() << " got " << k;
  }
}

// Without --cpu-own-depthwise on depthwise convolutions stay on oneDNN (the kernel is opt-in).
TEST(CpuDepthwise, OffByDefault) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {1, 16, 8, 8});
  b.output(b.node("Conv", {x, b.constant(random_tensor({16, 1, 3, 3}, 1))}, {{"group", int_attr(16)}}));
  const std::string k = kernel_name(*b.finish().nodes[0], BackendOptions{});
  EXPECT_NE(k.find("onednn"), std::string::npos) << k;
}

// A runtime X whose channels do not match the weights gets an error naming the node's shapes.
TEST(CpuDepthwise, WrongChannelCountIsAnError) {
  GraphBuilder b;
  ir::Value* x = b.dynamic_input("x", {1, 16, 8, 8});
  b.output(b.node("Conv", {x, b.constant(random_tensor({16, 1, 3, 3}, 1))}, {{"group", int_attr(16)}}));
  ir::Graph& g = b.finish();
  auto r = run_graph(g, "cpu", {random_tensor({1, 8, 8, 8}, 2)}, nullptr, own_depthwise());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("16"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
