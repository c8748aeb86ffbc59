// The cpu backend's oneDNN pooling, batch normalization, eltwise and binary kernels against the
// reference backend, on plain inputs and on blocked ones coming from a convolution.
#include <functional>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/layout.h"

namespace ferry::backends::cpu::testing {
namespace {

// Builds the graph on top of an input x (optionally through a conv first, so x arrives blocked),
// runs both backends, compares every graph output and checks the op ran on the cpu backend.
struct OpCase {
  std::string name;
  std::vector<int64_t> x;
  std::function<ir::Value*(GraphBuilder&, ir::Value*)> build;
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

void check_case(const OpCase& c, bool after_conv) {
  GraphBuilder b;
  ir::Value* x = b.input("x", c.x);
  ir::Value* in = x;
  if (after_conv) {
    const int64_t ch = c.x[1];
    std::vector<int64_t> w{ch, ch};
    for (size_t i = 2; i < c.x.size(); ++i) w.push_back(1);
    in = b.node("Conv", {x, b.constant(random_tensor(w, 11)), b.constant(random_tensor({ch}, 12))});
  }
  ir::Value* y = c.build(b, in);
  b.output(y);
  ir::Graph& g = b.finish();
  auto backend = make_backend("cpu");
  for (const auto& n : g.nodes)
    if (!n->inputs.empty() && (n->inputs[0] == in || n->inputs[0] == x)) {
      EXPECT_TRUE((*backend)->supports(*n)) << c.name << ": " << n->label() << " fell back to the reference";
    }
  Tensor xt = random_tensor(c.x, 21);
  int hook_calls = 0;
  runtime::NodeHook hook = [&](const ir::Node&, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
    hook_calls++;
    for (const auto& o : outs) {
      EXPECT_TRUE(!o.is_tensor() || o.tensor.is_plain());
    }
  };
  auto got = run_graph(g, "cpu", {xt}, &hook);
  auto want = run_graph(g, "reference", {xt});
  ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().to_string();
  ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().to_string();
  EXPECT_EQ(hook_calls, static_cast<int>(g.nodes.size()));
  expect_close((*got)[0], (*want)[0], 1e-4f, c.name + (after_conv ? " (after conv)" : ""));
}

class CpuOpCases : public ::testing::TestWithParam<OpCase> {};
TEST_P(CpuOpCases, PlainInput) { check_case(GetParam(), false); }
TEST_P(CpuOpCases, BlockedInputFromConv) { check_case(GetParam(), true); }

ir::Value* one(GraphBuilder& b, const std::string& op, ir::Value* x, Attrs a = {}, int opset = 20) {
  return b.node(op, {x}, std::move(a), opset);
}

std::vector<OpCase> pool_cases() {
  using V = ir::Value*;
  return {
      {"maxpool_resnet", {1, 16, 12, 12}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({3, 3})}, {"strides", ints_attr({2, 2})}, {"pads", ints_attr({1, 1, 1, 1})}}); }},
      {"maxpool_ceil", {2, 13, 9, 9}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}, {"ceil_mode", int_attr(1)}}); }},
      {"maxpool_dilated", {1, 8, 10, 10}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({3, 3})}, {"dilations", ints_attr({2, 2})}}); }},
      {"maxpool_asym_pads", {1, 8, 7, 8}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({3, 2})}, {"pads", ints_attr({0, 1, 2, 0})}}); }},
      {"maxpool_same_upper", {1, 8, 7, 7}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({3, 3})}, {"strides", ints_attr({2, 2})}, {"auto_pad", string_attr("SAME_UPPER")}}); }},
      {"maxpool_1d", {2, 5, 11}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({3})}, {"strides", ints_attr({2})}}); }},
      {"maxpool_3d", {1, 4, 5, 6, 7}, [](GraphBuilder& b, V x) { return one(b, "MaxPool", x, {{"kernel_shape", ints_attr({2, 2, 2})}}); }},
      {"avgpool_exclude_pad", {1, 17, 8, 8}, [](GraphBuilder& b, V x) { return one(b, "AveragePool", x, {{"kernel_shape", ints_attr({3, 3})}, {"pads", ints_attr({1, 1, 1, 1})}}); }},
      {"avgpool_include_pad", {1, 17, 8, 8}, [](GraphBuilder& b, V x) { return one(b, "AveragePool", x, {{"kernel_shape", ints_attr({3, 3})}, {"pads", ints_attr({1, 1, 1, 1})}, {"count_include_pad", int_attr(1)}}); }},
      {"avgpool_ceil", {1, 8, 9, 9}, [](GraphBuilder& b, V x) { return one(b, "AveragePool", x, {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}, {"ceil_mode", int_attr(1)}}); }},
      {"global_avg", {2, 13, 7, 7}, [](GraphBuilder& b, V x) { return one(b, "GlobalAveragePool", x); }},
      {"global_max", {2, 13, 7, 7}, [](GraphBuilder& b, V x) { return one(b, "GlobalMaxPool", x); }},
      // Large enough for the threads to split the pixels (the own reduction's parallel path).
      {"global_avg_split", {1, 40, 30, 30}, [](GraphBuilder& b, V x) { return one(b, "GlobalAveragePool", x); }},
      {"global_avg_split_1d", {2, 20, 2000}, [](GraphBuilder& b, V x) { return one(b, "GlobalAveragePool", x); }},
      // ReduceMean / ReduceSum over the spatial axes (the blocked input itself: reduce_test.cc).
      {"reduce_mean_spatial", {2, 40, 7, 7}, [](GraphBuilder& b, V x) { return one(b, "ReduceMean", x, {{"axes", ints_attr({2, 3})}, {"keepdims", int_attr(0)}}, 11); }},
      {"reduce_mean_spatial_keepdims", {1, 24, 9, 9}, [](GraphBuilder& b, V x) { return one(b, "ReduceMean", x, {{"axes", ints_attr({-2, -1})}}, 11); }},
      {"reduce_sum_spatial", {2, 40, 7, 7}, [](GraphBuilder& b, V x) { return one(b, "ReduceSum", x, {{"axes", ints_attr({2, 3})}}, 11); }},
      {"global_avg_split_3d", {1, 24, 6, 20, 20}, [](GraphBuilder& b, V x) { return one(b, "GlobalAveragePool", x); }},
      {"global_avg_then_flatten", {2, 32, 5, 5}, [](GraphBuilder& b, V x) { return one(b, "Flatten", one(b, "GlobalAveragePool", x)); }},
      {"batchnorm", {2, 13, 5, 6}, [](GraphBuilder& b, V x) {
         Tensor var = random_tensor({13}, 4);
         for (int i = 0; i < 13; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.1f;
         return b.node("BatchNormalization", {x, b.constant(random_tensor({13}, 1)), b.constant(random_tensor({13}, 2)),
                                              b.constant(random_tensor({13}, 3)), b.constant(var)},
                       {{"epsilon", float_attr(1e-3f)}}, 15);
       }},
  };
}

std::vector<OpCase> eltwise_cases() {
  using V = ir::Value*;
  std::vector<OpCase> v;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Abs", "Exp", "Mish", "Neg"})
    v.push_back({op, {2, 13, 4, 5}, [op](GraphBuilder& b, V x) { return one(b, op, x); }});
  v.push_back({"LeakyRelu", {2, 13, 4, 5}, [](GraphBuilder& b, V x) { return one(b, "LeakyRelu", x, {{"alpha", float_attr(0.2f)}}); }});
  v.push_back({"Elu", {2, 13, 4, 5}, [](GraphBuilder& b, V x) { return one(b, "Elu", x, {{"alpha", float_attr(0.5f)}}); }});
  v.push_back({"Gelu", {2, 13, 4, 5}, [](GraphBuilder& b, V x) { return one(b, "Gelu", x); }});
  v.push_back({"GeluTanh", {2, 13, 4, 5}, [](GraphBuilder& b, V x) { return one(b, "Gelu", x, {{"approximate", string_attr("tanh")}}); }});
  v.push_back({"Clip6", {2, 13, 4, 5}, [](GraphBuilder& b, V x) {
                 return b.node("Clip", {x, b.constant(Tensor::scalar(-0.25f)), b.constant(Tensor::scalar(0.5f))});
               }});
  v.push_back({"ClipMaxOnly", {2, 13, 4, 5}, [](GraphBuilder& b, V x) { return b.node("Clip", {x, nullptr, b.constant(Tensor::scalar(0.3f))}); }});
  v.push_back({"SqrtOfAbs", {2, 13, 4, 5}, [](GraphBuilder& b, V x) { return one(b, "Sqrt", one(b, "Abs", x)); }});
  return v;
}

std::vector<OpCase> binary_cases() {
  using V = ir::Value*;
  std::vector<OpCase> v;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    // Same shape, both from the graph (x op relu(x)); the divisor kept away from zero.
    v.push_back({std::string(op) + "_same", {2, 13, 4, 5}, [op](GraphBuilder& b, V x) {
                   V other = b.node("Add", {one(b, "Relu", x), b.constant(Tensor::scalar(1.5f))});
                   return b.node(op, {x, other});
                 }});
    // Per-channel operand, as in squeeze-excite ([N,C,H,W] op [N,C,1,1]) and biases ([C,1,1]).
    v.push_back({std::string(op) + "_se", {2, 13, 4, 5}, [op](GraphBuilder& b, V x) {
                   V s = one(b, "Sigmoid", one(b, "GlobalAveragePool", x));
                   return b.node(op, {x, s});
                 }});
    v.push_back({std::string(op) + "_channel_const", {2, 13, 4, 5}, [op](GraphBuilder& b, V x) {
                   Tensor c = random_tensor({13, 1, 1}, 8);
                   for (int i = 0; i < 13; ++i) c.data<float>()[i] += c.data<float>()[i] >= 0 ? 0.5f : -0.5f;
                   return b.node(op, {x, b.constant(c)});
                 }});
    // The smaller operand first: commutative ops swap, Sub/Div take the broadcasting path.
    v.push_back({std::string(op) + "_small_first", {2, 13, 4, 5}, [op](GraphBuilder& b, V x) {
                   return b.node(op, {b.constant(Tensor::scalar(2.5f)), x});
                 }});
  }
  v.push_back({"Add_both_broadcast", {2, 1, 4, 1}, [](GraphBuilder& b, V x) { return b.node("Add", {x, b.constant(random_tensor({3, 1, 5}, 3))}); }});
  return v;
}

// GlobalAveragePool's own reduction reads nchw, nhwc and channel-blocked inputs (with padded
// channels) as they are: each against the reference, small (one thread), large (split pixels) and wide (split channels).
TEST(CpuGlobalAveragePool, ReadsEachLayoutAsItIs) {
  // The last: few pixels, many channels (not a multiple of 16): channels-last splits over channel ranges.
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{3, 5, 7, 9}, std::vector<int64_t>{1, 40, 30, 30}, std::vector<int64_t>{1, 1000, 7, 7}}) {
    GraphBuilder b;
    ir::Value* x = b.input("x", dims);
    b.output(b.node("GlobalAveragePool", {x}));
    ir::Graph& g = b.finish();
    Tensor xt = random_tensor(dims, 5);
    auto want = run_graph(g, "reference", {xt});
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    auto backend = make_backend("cpu");
    auto k = (*backend)->create_kernel(*g.nodes[0]);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    using tag = dnnl::memory::format_tag;
    for (tag t : {tag::nchw, tag::nhwc, tag::nChw16c, tag::nChw8c}) {
      auto blocked = reorder_to(xt, dnnl::memory::desc({dims.begin(), dims.end()}, dnnl::memory::data_type::f32, t));
      ASSERT_TRUE(blocked.ok()) << blocked.status().to_string();
      RtValue in(*blocked);
      std::vector<const RtValue*> ins{&in};
      ops::KernelContext ctx(*g.nodes[0], ins, nullptr);
      Status st = (*k)->run(ctx);
      ASSERT_TRUE(st.ok()) << st.to_string();
      auto got = ctx.outputs()[0].tensor.plain();
      ASSERT_TRUE(got.ok());
      expect_close(*got, (*want)[0], 1e-5f, describe_desc(desc_of(*blocked)) + " " + dims_to_string(dims));
    }
  }
}

// Squeeze-excite's scaling takes the bytes of the operand of the output's shape where it dies, also
// when that operand comes second (Mul commutes); Sub must not (run() cannot swap its operands).
TEST(CpuBinary, FullOperandIsOverwrittenInPlace) {
  for (const char* op : {"Mul", "Sub"}) {
    GraphBuilder b;
    ir::Value* x = b.input("x", {1, 24, 20, 20});
    ir::Value* r = one(b, "Relu", x);
    ir::Value* s = one(b, "Sigmoid", one(b, "GlobalAveragePool", r));
    ir::Value* y = b.node(op, {s, r});
    b.output(one(b, "Sigmoid", y));
    ir::Graph& g = b.finish();
    Tensor xt = random_tensor({1, 24, 20, 20}, 3);
    auto want = run_graph(g, "reference", {xt});
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    auto backend = make_backend("cpu");
    runtime::Executor ex(std::move(*backend));
    ASSERT_TRUE(ex.prepare(g).ok());
    const runtime::GraphMemory& mem = *ex.main_plan()->memory;
    int ri = -1, yi = -1;
    for (size_t i = 0; i < mem.values.size(); ++i) {
      if (mem.values[i] == r) ri = static_cast<int>(i);
      if (mem.values[i] == y) yi = static_cast<int>(i);
    }
    ASSERT_GE(ri, 0);
    ASSERT_GE(yi, 0);
    if (std::string(op) == "Mul") {
      EXPECT_EQ(mem.plan.inplace_of[yi], ri);
    } else {
      EXPECT_NE(mem.plan.inplace_of[yi], ri);
    }
    runtime::Scope scope;
    scope.values[g.inputs[0]] = xt;
    ASSERT_TRUE(ex.run_graph(g, scope, nullptr).ok());
    auto got = scope.values.at(g.outputs[0]).tensor.plain();
    ASSERT_TRUE(got.ok());
    expect_close(*got, (*want)[0], 1e-5f, op);
  }
}

INSTANTIATE_TEST_SUITE_P(Pool, CpuOpCases, ::testing::ValuesIn(pool_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Eltwise, CpuOpCases, ::testing::ValuesIn(eltwise_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Binary, CpuOpCases, ::testing::ValuesIn(binary_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& i) { return i.param.name; });

// A resnet-style block: conv -> relu -> conv -> maxpool -> add(residual through a 1x1 stride-2 conv)
// -> relu; the intermediates stay blocked (each producer sees only layout-aware consumers).
TEST(CpuBlockedChain, ResidualBlockMatchesReferenceWithoutPlainIntermediates) {
  GraphBuilder b;
  ir::Value* x = b.input("x", {2, 16, 12, 12});
  Attrs p1{{"pads", ints_attr({1, 1, 1, 1})}};
  ir::Value* c1 = b.node("Conv", {x, b.constant(random_tensor({32, 16, 3, 3}, 1)), b.constant(random_tensor({32}, 2))}, p1);
  ir::Value* r1 = b.node("Relu", {c1});
  ir::Value* c2 = b.node("Conv", {r1, b.constant(random_tensor({32, 32, 3, 3}, 3))}, p1);
  ir::Value* mp = b.node("MaxPool", {c2}, {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}});
  ir::Value* sc = b.node("Conv", {r1, b.constant(random_tensor({32, 32, 1, 1}, 4))}, {{"strides", ints_attr({2, 2})}});
  ir::Value* add = b.node("Add", {mp, sc});
  b.output(b.node("Relu", {add}));
  ir::Graph& g = b.finish();

  auto backend = make_backend("cpu");
  for (const auto& n : g.nodes) ASSERT_TRUE((*backend)->supports(*n)) << n->label();
  for (ir::Value* v : {c1, r1, c2, mp, sc, add}) EXPECT_TRUE(may_produce_blocked(*v)) << v->name;
  EXPECT_FALSE(may_produce_blocked(*g.outputs[0]));

  Tensor xt = random_tensor({2, 16, 12, 12}, 5);
  std::vector<std::string> kernels_seen;
  runtime::NodeHook hook = [&](const ir::Node& n, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
    kernels_seen.push_back(n.op_type);
    EXPECT_TRUE(outs[0].tensor.is_plain());
  };
  auto got = run_graph(g, "cpu", {xt}, &hook);
  auto want = run_graph(g, "reference", {xt});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(kernels_seen.size(), g.nodes.size());
  EXPECT_TRUE((*got)[0].is_plain());
  expect_close((*got)[0], (*want)[0], 1e-4f, "residual block");
}

TEST(CpuPool, BadInputsAreErrors) {
  GraphBuilder b;
  ir::Value* x = b.dynamic_input("x", {1, 4, 5, 5});
  b.output(b.node("MaxPool", {x}, {{"kernel_shape", ints_attr({3, 3})}}));
  ir::Graph& g = b.finish();
  EXPECT_FALSE(run_graph(g, "cpu", {random_tensor({1, 4, 5}, 1)}).ok());         // wrong rank
  EXPECT_FALSE(run_graph(g, "cpu", {random_tensor({1, 4, 2, 2}, 1)}).ok());      // window larger than input
  EXPECT_FALSE(run_graph(g, "cpu", {Tensor(DType::kInt64, {1, 4, 5, 5})}).ok());  // dtype
  EXPECT_TRUE(run_graph(g, "cpu", {random_tensor({3, 4, 5, 5}, 1)}).ok());
}

TEST(CpuBinary, ShapeMismatchIsAnError) {
  GraphBuilder b;
  ir::Value* x = b.dynamic_input("x", {1, 4, 5, 5});
  ir::Value* y = b.dynamic_input("y", {1, 4, 5, 5});
  b.output(b.node("Add", {x, y}));
  ir::Graph& g = b.finish();
  auto r = run_graph(g, "cpu", {random_tensor({1, 4, 5, 5}, 1), random_tensor({1, 3, 5, 5}, 2)});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
