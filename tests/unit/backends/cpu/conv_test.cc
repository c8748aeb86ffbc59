// The cpu backend's oneDNN Conv / FusedConv against the reference backend: every attribute class,
// each post-op, the residual sum, blocked layouts between kernels, channel padding, bad inputs.
#include "unit/backends/cpu/conv_test_util.h"

#include <deque>
#include <map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"

namespace ferry::backends::cpu::testing {
namespace {

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  Attrs attrs;
  bool bias = true;
  bool dynamic_batch = false;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class CpuConvCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CpuConvCases, MatchesReference) {
  const ConvCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = c.dynamic_batch ? b.dynamic_input("x", c.x) : b.input("x", c.x);
  std::vector<ir::Value*> ins{x, b.constant(random_tensor(c.w, 2))};
  if (c.bias) ins.push_back(b.constant(random_tensor({c.w[0]}, 3)));
  b.output(b.node("Conv", ins, c.attrs));
  ir::Graph& g = b.finish();
  Tensor xt = random_tensor(c.x, 1);
  auto cpu = run_graph(g, "cpu", {xt});
  auto ref = run_graph(g, "reference", {xt});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name);
  // The node really ran on oneDNN (not the reference fallback).
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*g.nodes[0]));
}

INSTANTIATE_TEST_SUITE_P(
    Conv, CpuConvCases,
    ::testing::Values(
        ConvCase{"pad1", {1, 16, 8, 8}, {32, 16, 3, 3}, {{"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"stride2", {2, 8, 9, 9}, {16, 8, 3, 3}, {{"strides", ints_attr({2, 2})}, {"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"groups", {1, 8, 7, 7}, {16, 4, 3, 3}, {{"group", int_attr(2)}}},
        // RegNet's group width 8 (not whole 16-channel blocks): channels-last on AVX-512.
        ConvCase{"groups_width8_stride2", {1, 48, 14, 14}, {48, 8, 3, 3}, {{"group", int_attr(6)}, {"strides", ints_attr({2, 2})}, {"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"groups_width8_batch2", {2, 104, 7, 7}, {104, 8, 3, 3}, {{"group", int_attr(13)}, {"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"depthwise", {1, 32, 10, 10}, {32, 1, 3, 3}, {{"group", int_attr(32)}, {"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"depthwise_stride2", {1, 24, 11, 11}, {24, 1, 5, 5}, {{"group", int_attr(24)}, {"strides", ints_attr({2, 2})}, {"pads", ints_attr({2, 2, 2, 2})}}},
        ConvCase{"dilation", {1, 4, 12, 12}, {8, 4, 3, 3}, {{"dilations", ints_attr({2, 3})}, {"pads", ints_attr({2, 3, 2, 3})}}},
        ConvCase{"asym_pads", {1, 5, 9, 8}, {6, 5, 3, 2}, {{"pads", ints_attr({0, 1, 2, 0})}}},
        ConvCase{"same_upper", {1, 6, 9, 9}, {8, 6, 4, 4}, {{"auto_pad", string_attr("SAME_UPPER")}, {"strides", ints_attr({2, 2})}}},
        ConvCase{"same_lower", {1, 6, 9, 9}, {8, 6, 4, 4}, {{"auto_pad", string_attr("SAME_LOWER")}, {"strides", ints_attr({2, 2})}}},
        ConvCase{"valid", {1, 6, 10, 9}, {8, 6, 3, 3}, {{"auto_pad", string_attr("VALID")}, {"strides", ints_attr({2, 2})}}},
        ConvCase{"no_bias", {1, 16, 6, 6}, {16, 16, 1, 1}, {}, false},
        ConvCase{"first_layer_c3", {1, 3, 32, 32}, {16, 3, 7, 7}, {{"strides", ints_attr({2, 2})}, {"pads", ints_attr({3, 3, 3, 3})}}},
        ConvCase{"odd_channels_13_17", {1, 13, 7, 7}, {17, 13, 3, 3}, {{"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"kernel_shape_attr", {1, 4, 5, 5}, {4, 4, 3, 3}, {{"kernel_shape", ints_attr({3, 3})}}},
        ConvCase{"batch3", {3, 16, 8, 8}, {24, 16, 3, 3}, {{"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"dynamic_batch", {2, 8, 6, 6}, {8, 8, 3, 3}, {}, true, true},
        // Winograd-eligible shapes (3x3, stride 1, >= 32 input and 64 output channels), batch 1 and batch 4.
        ConvCase{"winograd_b1", {1, 64, 24, 24}, {64, 64, 3, 3}, {{"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"winograd_b4_odd", {4, 48, 9, 11}, {64, 48, 3, 3}, {{"pads", ints_attr({1, 1, 1, 1})}}},
        ConvCase{"winograd_nopad", {2, 32, 12, 12}, {64, 32, 3, 3}, {}},
        ConvCase{"conv1d", {2, 5, 20}, {7, 5, 3}, {{"pads", ints_attr({1, 2})}, {"strides", ints_attr({2})}}},
        ConvCase{"conv3d", {1, 4, 6, 6, 6}, {8, 4, 3, 3, 3}, {{"pads", ints_attr({1, 1, 1, 1, 1, 1})}}}),
    [](const ::testing::TestParamInfo<ConvCase>& i) { return i.param.name; });

// The reference graph for one post-op applied to `y`.
ir::Value* reference_post_op(GraphBuilder& b, const std::string& op, float alpha, float beta, ir::Value* y, ir::Value* z) {
  if (op == "sum") return b.node("Add", {y, z});
  if (op == "LeakyRelu") return b.node("LeakyRelu", {y}, {{"alpha", float_attr(alpha)}});
  if (op == "Elu") return b.node("Elu", {y}, {{"alpha", float_attr(alpha)}});
  if (op == "HardSigmoid") return b.node("HardSigmoid", {y}, {{"alpha", float_attr(alpha)}, {"beta", float_attr(beta)}});
  if (op == "Clip") return b.node("Clip", {y, b.constant(Tensor::scalar(alpha)), b.constant(Tensor::scalar(beta))});
  if (op == "Silu") return b.node("Mul", {y, b.node("Sigmoid", {y})});
  if (op == "GeluTanh") return b.node("Gelu", {y}, {{"approximate", string_attr("tanh")}});
  if (op == "Mul") return b.node("Mul", {y, b.constant(Tensor::scalar(alpha))});
  if (op == "Add") return b.node("Add", {y, b.constant(Tensor::scalar(alpha))});
  return b.node(op, {y});
}

struct PostOpCase {
  std::vector<std::string> ops;
  std::vector<float> alpha, beta;
};

void PrintTo(const PostOpCase& c, std::ostream* os) {
  for (const auto& o : c.ops) *os << o << " ";
}

class CpuFusedConvPostOps : public ::testing::TestWithParam<PostOpCase> {};

TEST_P(CpuFusedConvPostOps, MatchesUnfusedReference) {
  const PostOpCase& c = GetParam();
  const bool big = GetParam().ops.size() > 1 || GetParam().ops[0] == "sum";  // also covers Winograd-eligible shapes
  const int64_t n = big ? 4 : 2;
  const std::vector<int64_t> xd{n, big ? 48 : 13, 9, 9}, wd{big ? 64 : 20, big ? 48 : 13, 3, 3}, yd{n, big ? 64 : 20, 9, 9};
  Tensor w = random_tensor(wd, 4), bias = random_tensor({wd[0]}, 5);
  Attrs conv_attrs{{"pads", ints_attr({1, 1, 1, 1})}};
  bool has_sum = false;
  for (const auto& o : c.ops) has_sum = has_sum || o == "sum";

  GraphBuilder fused;
  std::vector<ir::Value*> ins{fused.input("x", xd), fused.constant(w), fused.constant(bias)};
  if (has_sum) ins.push_back(fused.input("z", yd));
  Attrs fa = conv_attrs;
  fa["post_ops"] = strings_attr(c.ops);
  fa["post_op_alpha"] = floats_attr(c.alpha);
  fa["post_op_beta"] = floats_attr(c.beta);
  ir::Value* fy = fused.node("FusedConv", ins, fa, 1, "com.ferry");
  fy->shape = to_shape(yd);  // no reference schema needed for this test
  fused.output(fy);

  GraphBuilder ref;
  ir::Value* rx = ref.input("x", xd);
  ir::Value* rz = has_sum ? ref.input("z", yd) : nullptr;
  ir::Value* y = ref.node("Conv", {rx, ref.constant(w), ref.constant(bias)}, conv_attrs);
  for (size_t i = 0; i < c.ops.size(); ++i) y = reference_post_op(ref, c.ops[i], c.alpha[i], c.beta[i], y, rz);
  ref.output(y);

  std::vector<Tensor> inputs{random_tensor(xd, 6)};
  if (has_sum) inputs.push_back(random_tensor(yd, 7));
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*fused.graph().nodes[0]));
  auto got = run_graph(fused.graph(), "cpu", inputs);
  auto want = run_graph(ref.finish(), "reference", inputs);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 1e-4f, c.ops[0]);
}

INSTANTIATE_TEST_SUITE_P(
    FusedConv, CpuFusedConvPostOps,
    ::testing::Values(PostOpCase{{"Relu"}, {0}, {0}}, PostOpCase{{"LeakyRelu"}, {0.1f}, {0}},
                      PostOpCase{{"Clip"}, {0.f}, {6.f}}, PostOpCase{{"Sigmoid"}, {0}, {0}},
                      PostOpCase{{"Tanh"}, {0}, {0}}, PostOpCase{{"HardSigmoid"}, {0.2f}, {0.5f}},
                      PostOpCase{{"HardSwish"}, {0}, {0}}, PostOpCase{{"Silu"}, {0}, {0}},
                      PostOpCase{{"Gelu"}, {0}, {0}}, PostOpCase{{"GeluTanh"}, {0}, {0}},
                      PostOpCase{{"Elu"}, {0.7f}, {0}}, PostOpCase{{"Mish"}, {0}, {0}},
                      PostOpCase{{"Softplus"}, {0}, {0}}, PostOpCase{{"Abs"}, {0}, {0}},
                      PostOpCase{{"Mul"}, {-1.5f}, {0}}, PostOpCase{{"Add"}, {0.25f}, {0}},
                      PostOpCase{{"sum"}, {0}, {0}}, PostOpCase{{"sum", "Relu"}, {0, 0}, {0, 0}},
                      PostOpCase{{"Relu", "sum"}, {0, 0}, {0, 0}},
                      PostOpCase{{"Clip", "sum", "Silu"}, {-0.5f, 0, 0}, {0.5f, 0, 0}},
                      PostOpCase{{"Relu", "Relu"}, {0, 0}, {0, 0}}, PostOpCase{{"sum", "Clip"}, {0, 0.f}, {0, 6.f}}),
    [](const ::testing::TestParamInfo<PostOpCase>& i) {
      std::string s;
      for (const auto& o : i.param.ops) s += (s.empty() ? "" : "_") + o;
      return s;
    });

TEST(CpuFusedConv, UnknownPostOpIsNotSupported) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {1, 4, 5, 5});
  b.node("FusedConv", {x, b.constant(random_tensor({4, 4, 3, 3}, 1))},
         {{"post_ops", strings_attr({"Frobnicate"})}, {"post_op_alpha", floats_attr({0})}, {"post_op_beta", floats_attr({0})}},
         1, "com.ferry");
  auto backend = make_backend("cpu");
  EXPECT_FALSE((*backend)->supports(*b.graph().nodes[0]));
}

// conv -> conv -> conv(+residual from the first): intermediates stay blocked between the kernels, the
// graph output and the hook see plain tensors with the reference's values.
TEST(CpuConvChain, KeepsBlockedLayoutsBetweenKernels) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {2, 3, 16, 16});
  Attrs p1{{"pads", ints_attr({1, 1, 1, 1})}};
  ir::Value* c1 = b.node("Conv", {x, b.constant(random_tensor({17, 3, 3, 3}, 1)), b.constant(random_tensor({17}, 2))}, p1);
  ir::Value* c2 = b.node("Conv", {c1, b.constant(random_tensor({17, 17, 3, 3}, 3))}, p1);
  ir::Value* c3 = b.node("FusedConv", {c2, b.constant(random_tensor({17, 17, 1, 1}, 4)), b.constant(random_tensor({17}, 5)), c1},
                         {{"post_ops", strings_attr({"sum", "Relu"})}, {"post_op_alpha", floats_attr({0, 0})},
                          {"post_op_beta", floats_attr({0, 0})}},
                         1, "com.ferry");
  b.output(c3);
  ir::Graph& g = b.finish();
  c3->shape = to_shape({2, 17, 16, 16});

  // What the first two kernels produce: blocked (their consumers are cpu convs); the last: plain.
  auto backend = make_backend("cpu");
  Tensor xt = random_tensor({2, 3, 16, 16}, 9);
  std::map<const ir::Value*, RtValue> vals{{x, RtValue(xt)}};
  std::deque<RtValue> consts;
  std::vector<bool> blocked;
  for (const auto& n : g.nodes) {
    auto k = (*backend)->create_kernel(*n);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_TRUE((*k)->accepts_layouts());
    EXPECT_NE((*k)->name().find("cpu"), std::string::npos);
    std::vector<const RtValue*> ins;
    for (const ir::Value* in : n->inputs) {
      if (in->is_constant()) {
        consts.emplace_back(in->initializer);
        ins.push_back(&consts.back());
      } else {
        ins.push_back(&vals.at(in));
      }
    }
    ops::KernelContext ctx(*n, ins, nullptr);
    Status st = (*k)->run(ctx);
    ASSERT_TRUE(st.ok()) << st.to_string();
    blocked.push_back(!ctx.outputs()[0].tensor.is_plain());
    vals[n->outputs[0]] = ctx.outputs()[0];
  }
  EXPECT_EQ(blocked, (std::vector<bool>{true, true, false}));
  // oneDNN 2.6's AVX-512 brgconv picks channels-last; other machines may pick nChw16c/nChw8c.
  const std::string layout = vals.at(c1).tensor.layout()->describe();
  EXPECT_TRUE(layout == "nhwc" || layout == "nChw16c" || layout == "nChw8c") << layout;

  // The reference runs FusedConv as Conv + Add + Relu.
  GraphBuilder r;
  ir::Value* rx = r.input("x", {2, 3, 16, 16});
  ir::Value* r1 = r.node("Conv", {rx, r.constant(g.nodes[0]->inputs[1]->initializer), r.constant(g.nodes[0]->inputs[2]->initializer)}, p1);
  ir::Value* r2 = r.node("Conv", {r1, r.constant(g.nodes[1]->inputs[1]->initializer)}, p1);
  ir::Value* r3 = r.node("Conv", {r2, r.constant(g.nodes[2]->inputs[1]->initializer), r.constant(g.nodes[2]->inputs[2]->initializer)});
  r.output(r.node("Relu", {r.node("Add", {r3, r1})}));
  auto want = run_graph(r.finish(), "reference", {xt});
  ASSERT_TRUE(want.ok()) << want.status().to_string();

  int hook_calls = 0;
  runtime::NodeHook hook = [&](const ir::Node&, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
    hook_calls++;
    EXPECT_TRUE(outs[0].tensor.is_plain());
  };
  auto got = run_graph(g, "cpu", {xt}, &hook);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(hook_calls, 3);
  expect_close((*got)[0], (*want)[0], 1e-4f, "chain");
}

// A residual that dies at its FusedConv gives the destination its bytes (the sum post-op then reads it
// where it lies); a residual that is also the convolution's input must not (the convolution reads its
// input's neighbourhood after writing). Both against the reference, twice (the arena is reused).
TEST(CpuFusedConv, ResidualIsOverwrittenInPlaceOnlyWhenSafe) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {2, 17, 8, 8});
  Attrs p1{{"pads", ints_attr({1, 1, 1, 1})}};
  Attrs sum_relu{{"post_ops", strings_attr({"sum", "Relu"})}, {"post_op_alpha", floats_attr({0, 0})},
                 {"post_op_beta", floats_attr({0, 0})}};
  ir::Value* c1 = b.node("Conv", {x, b.constant(random_tensor({17, 17, 3, 3}, 1))}, p1);
  ir::Value* c2 = b.node("Conv", {c1, b.constant(random_tensor({17, 17, 3, 3}, 2))}, p1);
  ir::Value* c3 = b.node("FusedConv", {c2, b.constant(random_tensor({17, 17, 1, 1}, 3)), b.constant(random_tensor({17}, 4)), c1},
                         sum_relu, 1, "com.ferry");
  ir::Value* c4 = b.node("FusedConv", {c3, b.constant(random_tensor({17, 17, 3, 3}, 5)), b.constant(random_tensor({17}, 6)), c3},
                         [&] { Attrs a = sum_relu; a.insert(p1.begin(), p1.end()); return a; }(), 1, "com.ferry");
  b.output(b.node("Sigmoid", {c4}));  // c4 in the arena too, not a graph output
  ir::Graph& g = b.finish();
  for (ir::Value* v : {c1, c2, c3, c4}) v->shape = to_shape({2, 17, 8, 8});

  GraphBuilder r;
  ir::Value* rx = r.input("x", {2, 17, 8, 8});
  auto w = [&](int node) { return r.constant(g.nodes[node]->inputs[1]->initializer); };
  auto bias = [&](int node) { return r.constant(g.nodes[node]->inputs[2]->initializer); };
  ir::Value* r1 = r.node("Conv", {rx, w(0)}, p1);
  ir::Value* r2 = r.node("Conv", {r1, w(1)}, p1);
  ir::Value* r3 = r.node("Relu", {r.node("Add", {r.node("Conv", {r2, w(2), bias(2)}), r1})});
  r.output(r.node("Sigmoid", {r.node("Relu", {r.node("Add", {r.node("Conv", {r3, w(3), bias(3)}, p1), r3})})}));
  Tensor xt = random_tensor({2, 17, 8, 8}, 9);
  auto want = run_graph(r.finish(), "reference", {xt});
  ASSERT_TRUE(want.ok()) << want.status().to_string();

  auto backend = make_backend("cpu");
  ASSERT_TRUE(backend.ok());
  runtime::Executor ex(std::move(*backend));
  ASSERT_TRUE(ex.prepare(g).ok());
  const runtime::GraphMemory& mem = *ex.main_plan()->memory;
  auto request_of = [&](const ir::Value* v) {
    for (size_t i = 0; i < mem.values.size(); ++i)
      if (mem.values[i] == v) return static_cast<int>(i);
    return -1;
  };
  ASSERT_GE(request_of(c1), 0);
  ASSERT_GE(request_of(c3), 0);
  EXPECT_EQ(mem.plan.inplace_of[request_of(c3)], request_of(c1));  // c3 over the dying residual c1
  ASSERT_GE(request_of(c4), 0);
  EXPECT_NE(mem.plan.inplace_of[request_of(c4)], request_of(c3));  // X == Z: not in place
  for (int run = 0; run < 2; ++run) {
    runtime::Scope scope;
    scope.values[g.inputs[0]] = xt;
    Status st = ex.run_graph(g, scope, nullptr);
    ASSERT_TRUE(st.ok()) << st.to_string();
    auto got = scope.values.at(g.outputs[0]).tensor.plain();
    ASSERT_TRUE(got.ok());
    expect_close(*got, (*want)[0], 1e-4f, "run " + std::to_string(run));
  }
}

// Dense CNNs whose activations stream from memory run their 1x1 convolutions on oneDNN's nChw16c
// jit_1x1 kernel (conv.cc, kStreamingActivationBytes): at batch 32 here (8 MiB activations), not at
// batch 1, and not in a graph with a depthwise convolution. Values against the reference either way.
TEST(CpuConv, StreamingDenseGraphsRunBlocked1x1) {
  auto build = [](int64_t batch, bool depthwise) {
    GraphBuilder b;
    ir::Value* x = b.input("x", {batch, 64, 32, 32});
    // (Dense: a 1x1 convolution first too, so no Winograd kernel adds its own rounding.)
    ir::Value* c1 = depthwise ? b.node("Conv", {x, b.constant(random_tensor({64, 1, 3, 3}, 1))},
                                       {{"pads", ints_attr({1, 1, 1, 1})}, {"group", int_attr(64)}})
                              : b.node("Conv", {x, b.constant(random_tensor({64, 64, 1, 1}, 1))});
    ir::Value* c2 = b.node("FusedConv", {c1, b.constant(random_tensor({64, 64, 1, 1}, 2)), b.constant(random_tensor({64}, 3)), x},
                           {{"post_ops", strings_attr({"sum", "Relu"})}, {"post_op_alpha", floats_attr({0, 0})},
                            {"post_op_beta", floats_attr({0, 0})}},
                           1, "com.ferry");
    c2->shape = to_shape({batch, 64, 32, 32});
    b.output(c2);
    ir::Graph& g = b.finish();
    auto backend = make_backend("cpu");
    EXPECT_TRUE(backend.ok());
    auto k = (*backend)->create_kernel(*g.nodes[1]);
    EXPECT_TRUE(k.ok()) << k.status().to_string();
    return std::make_pair(k.ok() ? (*k)->name() : std::string(), std::move(b));  // the 1x1 kernel's name
  };
  auto [dense_big, dense_big_graph] = build(32, false);
  EXPECT_NE(dense_big.find("jit_1x1"), std::string::npos) << dense_big;

  ir::Graph& g = dense_big_graph.graph();
  Tensor xt = random_tensor({32, 64, 32, 32}, 9);
  auto got = run_graph(g, "cpu", {xt});
  auto want = run_graph(g, "reference", {xt});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 1e-4f, "batch 32");

  auto [dense_small, g1] = build(1, false);
  auto [grouped_big, g2] = build(32, true);
  // Below AVX-512 oneDNN 2.6 has no brgconv: format `any` picks jit_1x1 anyway.
  if (dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core)
    GTEST_SKIP() << "no brgconv below AVX-512 (1x1 kernel at batch 1: " << dense_small << ")";
  EXPECT_EQ(dense_small.find("jit_1x1"), std::string::npos) << dense_small;
  EXPECT_EQ(grouped_big.find("jit_1x1"), std::string::npos) << grouped_big;
}

TEST(CpuConv, GroupsOfEightChannelsRunOnAJitKernel) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {1, 104, 28, 28});
  b.output(b.node("Conv", {x, b.constant(random_tensor({104, 8, 3, 3}, 1))},
                  {{"group", int_attr(13)}, {"pads", ints_attr({1, 1, 1, 1})}}));
  ir::Graph& g = b.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE(backend.ok());
  auto k = (*backend)->create_kernel(*g.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name().find("ref"), std::string::npos) << (*k)->name();
}

TEST(CpuConv, ReadsPaddedBlockedInputs) {
  // 13 channels in nChw16c (3 padding channels per block, as another oneDNN producer may hand over).
  GraphBuilder b;
  ir::Value* x = b.input("x", {2, 13, 6, 6});
  b.output(b.node("Conv", {x, b.constant(random_tensor({8, 13, 3, 3}, 1)), b.constant(random_tensor({8}, 2))},
                  {{"pads", ints_attr({1, 1, 1, 1})}}));
  ir::Graph& g = b.finish();
  Tensor plain = random_tensor({2, 13, 6, 6}, 3);
  auto blocked = reorder_to(plain, dnnl::memory::desc({2, 13, 6, 6}, dnnl::memory::data_type::f32,
                                                      dnnl::memory::format_tag::nChw16c));
  ASSERT_TRUE(blocked.ok());
  ASSERT_EQ(blocked->layout()->describe(), "nChw16c");
  auto backend = make_backend("cpu");
  auto k = (*backend)->create_kernel(*g.nodes[0]);
  ASSERT_TRUE(k.ok());
  ASSERT_TRUE((*k)->accepts_layouts());
  RtValue xv(*blocked), wv(g.nodes[0]->inputs[1]->initializer), bv(g.nodes[0]->inputs[2]->initializer);
  ops::KernelContext ctx(*g.nodes[0], {&xv, &wv, &bv}, nullptr);
  Status st = (*k)->run(ctx);
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto got = ctx.outputs()[0].tensor.plain();
  ASSERT_TRUE(got.ok());
  auto want = run_graph(g, "reference", {plain});
  ASSERT_TRUE(want.ok());
  expect_close(*got, (*want)[0], 1e-4f, "padded input");
}

TEST(CpuConv, BadInputsAreErrors) {
  GraphBuilder b;
  ir::Value* x = b.dynamic_input("x", {1, 4, 5, 5});
  b.output(b.node("Conv", {x, b.constant(random_tensor({4, 4, 3, 3}, 1))}));
  ir::Graph& g = b.finish();
  auto wrong_channels = run_graph(g, "cpu", {random_tensor({1, 5, 5, 5}, 2)});
  ASSERT_FALSE(wrong_channels.ok());
  EXPECT_NE(wrong_channels.status().to_string().find("channels"), std::string::npos) << wrong_channels.status().to_string();
  auto wrong_rank = run_graph(g, "cpu", {random_tensor({4, 5, 5}, 2)});
  EXPECT_FALSE(wrong_rank.ok());
  auto too_small = run_graph(g, "cpu", {random_tensor({1, 4, 2, 2}, 2)});
  EXPECT_FALSE(too_small.ok());
  auto wrong_dtype = run_graph(g, "cpu", {Tensor(DType::kInt32, {1, 4, 5, 5})});
  EXPECT_FALSE(wrong_dtype.ok());
  // Still works after the errors.
  auto fine = run_graph(g, "cpu", {random_tensor({2, 4, 5, 5}, 2)});
  EXPECT_TRUE(fine.ok()) << fine.status().to_string();
}

TEST(CpuConv, BadWeightsFailAtPrepare) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {1, 6, 5, 5});
  b.output(b.node("Conv", {x, b.constant(random_tensor({5, 3, 3, 3}, 1))}, {{"group", int_attr(2)}}));
  auto st = run_graph(b.graph(), "cpu", {random_tensor({1, 6, 5, 5}, 2)});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().to_string().find("divisible"), std::string::npos) << st.status().to_string();
}

}  // namespace
}  // namespace ferry::backends::cpu::testing

namespace ferry::backends::cpu::testing {
namespace {

struct DeconvCase {
  std::string name;
  std::vector<int64_t> x, w;
  Attrs attrs;
  bool bias = true;
  bool weights_as_input = false;
};
void PrintTo(const DeconvCase& c, std::ostream* os) { *os << c.name; }

class CpuConvTransposeCases : public ::testing::TestWithParam<DeconvCase> {};

TEST_P(CpuConvTransposeCases, MatchesReference) {
  const DeconvCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.input("x", c.x);
  Tensor wt = random_tensor(c.w, 2);
  ir::Value* w = c.weights_as_input ? b.input("w", c.w) : b.constant(wt);
  std::vector<ir::Value*> ins{x, w};
  const int64_t m = c.w[1] * (c.attrs.count("group") ? c.attrs.at("group").i : 1);
  if (c.bias) ins.push_back(b.constant(random_tensor({m}, 3)));
  b.output(b.node("ConvTranspose", ins, c.attrs));
  ir::Graph& g = b.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*g.nodes[0]));
  std::vector<Tensor> inputs{random_tensor(c.x, 1)};
  if (c.weights_as_input) inputs.push_back(wt);
  auto cpu = run_graph(g, "cpu", inputs);
  auto ref = run_graph(g, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    ConvTranspose, CpuConvTransposeCases,
    ::testing::Values(
        DeconvCase{"stride2_pad1_outpad1", {1, 16, 5, 5}, {16, 8, 3, 3}, {{"strides", ints_attr({2, 2})}, {"pads", ints_attr({1, 1, 1, 1})}, {"output_padding", ints_attr({1, 1})}}},
        DeconvCase{"plain", {2, 5, 4, 6}, {5, 7, 3, 2}, {}},
        DeconvCase{"outpad_without_pads", {1, 4, 3, 3}, {4, 4, 3, 3}, {{"strides", ints_attr({2, 2})}, {"output_padding", ints_attr({1, 1})}}},
        DeconvCase{"groups", {1, 8, 5, 5}, {8, 3, 3, 3}, {{"group", int_attr(2)}, {"strides", ints_attr({2, 1})}}},
        DeconvCase{"dilation_no_bias", {1, 4, 6, 6}, {4, 4, 3, 3}, {{"dilations", ints_attr({2, 2})}}, false},
        DeconvCase{"output_shape", {1, 3, 4, 4}, {3, 2, 3, 3}, {{"strides", ints_attr({3, 2})}, {"output_shape", ints_attr({12, 9})}}},
        DeconvCase{"same_upper", {1, 3, 4, 4}, {3, 2, 3, 3}, {{"strides", ints_attr({2, 2})}, {"auto_pad", string_attr("SAME_UPPER")}}},
        DeconvCase{"conv1d", {2, 6, 9}, {6, 4, 4}, {{"strides", ints_attr({2})}, {"pads", ints_attr({1, 1})}}},
        DeconvCase{"weights_input", {1, 4, 5, 5}, {4, 6, 2, 2}, {{"strides", ints_attr({2, 2})}}, true, true}),
    [](const ::testing::TestParamInfo<DeconvCase>& i) { return i.param.name; });

}  // namespace
}  // namespace ferry::backends::cpu::testing
