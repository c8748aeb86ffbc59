// com.ferry FusedConv / FusedMatMul / FusedAttention against the unfused ONNX ops they stand for.
#include <gtest/gtest.h>

#include "../passes/pass_test_util.h"
#include "ops/util/post_ops.h"

namespace ferry::passes::testing {
namespace {

// Runs both graphs on the same random inputs and compares.
void expect_same(const std::string& fused, const std::string& unfused, double rtol = 1e-5) {
  auto a = parse(fused);
  auto b = parse(unfused);
  ASSERT_TRUE(a && b);
  auto in = random_inputs(*b->graph);
  expect_close(run_reference(std::move(a), in), run_reference(std::move(b), in), rtol);
}

TEST(FusedConv, BiasResidualAndReluMatchConvAddRelu) {
  expect_same(R"(graph g (%x: float32[2,4,6,6], %z: float32[2,4,3,3])
  const %w: float32[4,2,3,3]
  const %b: float32[4]
  %y = com.ferry.FusedConv(%x, %w, %b, %z) {group=2, pads=[1,1,1,1], strides=[2,2], post_ops=["sum","Relu"], post_op_alpha=[0.0,0.0], post_op_beta=[0.0,0.0]}  # f
  return %y
)",
              R"(graph g (%x: float32[2,4,6,6], %z: float32[2,4,3,3])
  const %w: float32[4,2,3,3]
  const %b: float32[4]
  %c = Conv(%x, %w, %b) {group=2, pads=[1,1,1,1], strides=[2,2]}  # c
  %s = Add(%c, %z)  # s
  %y = Relu(%s)  # r
  return %y
)");
}

TEST(FusedConv, InfersShapeAndRejectsBadPostOps) {
  auto m = parse(R"(graph g (%x: float32[1,2,5,5])
  const %w: float32[4,2,3,3]
  %y = com.ferry.FusedConv(%x, %w) {post_ops=["Clip"], post_op_alpha=[0.0], post_op_beta=[6.0]}  # f
  return %y
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(shape_to_string(*m->graph->outputs[0]->shape), "[1,4,3,3]");
  auto bad = ir::parse_model(R"(graph g (%x: float32[1,2,5,5])
  const %w: float32[4,2,3,3]
  %y = com.ferry.FusedConv(%x, %w) {post_ops=["Swish"]}  # f
  return %y
)");
  ASSERT_TRUE(bad.ok());
  Status st = ops::infer_graph(*(*bad)->graph);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("unknown post-op 'Swish'"), std::string::npos) << st.to_string();
  // sum without the residual input is an error at run time, not a crash
  auto m2 = parse(R"(graph g (%x: float32[1,2,5,5])
  const %w: float32[4,2,3,3]
  %y = com.ferry.FusedConv(%x, %w) {post_ops=["sum"]}  # f
  return %y
)");
  auto s = runtime::Session::from_model(std::move(m2));
  ASSERT_TRUE(s.ok());
  auto r = (*s)->run_tensors(random_inputs((*s)->graph()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("needs the residual input Z"), std::string::npos);
}

TEST(FusedMatMul, GemmWithTransposesAlphaBetaAndGelu) {
  expect_same(R"(opset "" 20
graph g (%a: float32[5,3])
  const %b: float32[4,5]
  const %c: float32[4]
  %y = com.ferry.FusedMatMul(%a, %b, %c) {alpha=0.5, trans_a=1, trans_b=1, post_ops=["Gelu"], post_op_alpha=[0.0], post_op_beta=[0.0]}  # f
  return %y
)",
              R"(opset "" 20
graph g (%a: float32[5,3])
  const %b: float32[4,5]
  const %c: float32[4]
  %m = Gemm(%a, %b, %c) {alpha=0.5, beta=1.0, transA=1, transB=1}  # m
  %y = Gelu(%m)  # g
  return %y
)");
}

TEST(FusedMatMul, BatchedBroadcastBiasResidualAnd1D) {
  expect_same(R"(graph g (%a: float32[2,3,4,5], %z: float32[2,3,4,6])
  const %b: float32[5,6]
  const %bias: float32[6]
  %y = com.ferry.FusedMatMul(%a, %b, %bias, %z) {post_ops=["sum","Sigmoid"], post_op_alpha=[0.0,0.0], post_op_beta=[0.0,0.0]}  # f
  return %y
)",
              R"(graph g (%a: float32[2,3,4,5], %z: float32[2,3,4,6])
  const %b: float32[5,6]
  const %bias: float32[6]
  %m = MatMul(%a, %b)  # m
  %p = Add(%m, %bias)  # p
  %s = Add(%p, %z)  # s
  %y = Sigmoid(%s)  # y
  return %y
)");
  // 1-D A: [K] x [K, N] -> [N]
  expect_same(R"(graph g (%a: float32[5])
  const %b: float32[5,6]
  %y = com.ferry.FusedMatMul(%a, %b)  # f
  return %y
)",
              R"(graph g (%a: float32[5])
  const %b: float32[5,6]
  %y = MatMul(%a, %b)  # m
  return %y
)");
}

struct EltCase {
  std::string post;       // post-op name
  float alpha, beta;
  std::string onnx_line;  // the ONNX op(s) computing the same from %m into %y
};

TEST(FusedMatMul, EveryEltwisePostOpMatchesItsOnnxOp) {
  const std::vector<EltCase> cases = {
      {"Relu", 0, 0, "%y = Relu(%m)  # e"},
      {"LeakyRelu", 0.1f, 0, "%y = LeakyRelu(%m) {alpha=0.1}  # e"},
      {"Clip", -0.5f, 0.25f, "%y = Clip(%m, %lo, %hi)  # e"},
      {"Sigmoid", 0, 0, "%y = Sigmoid(%m)  # e"},
      {"Tanh", 0, 0, "%y = Tanh(%m)  # e"},
      {"HardSigmoid", 0.3f, 0.4f, "%y = HardSigmoid(%m) {alpha=0.3, beta=0.4}  # e"},
      {"HardSwish", 0, 0, "%y = HardSwish(%m)  # e"},
      {"Silu", 0, 0, "%s = Sigmoid(%m)  # s\n  %y = Mul(%m, %s)  # e"},
      {"Gelu", 0, 0, "%y = Gelu(%m)  # e"},
      {"GeluTanh", 0, 0, "%y = Gelu(%m) {approximate=\"tanh\"}  # e"},
      {"Elu", 0.7f, 0, "%y = Elu(%m) {alpha=0.7}  # e"},
      {"Mish", 0, 0, "%y = Mish(%m)  # e"},
      {"Softplus", 0, 0, "%y = Softplus(%m)  # e"},
      {"Abs", 0, 0, "%y = Abs(%m)  # e"},
      {"Mul", 1.5f, 0, "%y = Mul(%m, %k)  # e"},
      {"Add", 1.5f, 0, "%y = Add(%m, %k)  # e"},
  };
  const std::string head = R"(opset "" 20
graph g (%a: float32[3,4])
  const %b: float32[4,5] = uniform(-2, 2)
  const %lo: float32[] = [-0.5]
  const %hi: float32[] = [0.25]
  const %k: float32[] = [1.5]
)";
  for (const auto& c : cases) {
    SCOPED_TRACE(c.post);
    std::string fused = head + "  %y = com.ferry.FusedMatMul(%a, %b) {post_ops=[\"" + c.post + "\"], post_op_alpha=[" +
                        std::to_string(c.alpha) + "], post_op_beta=[" + std::to_string(c.beta) + "]}  # f\n  return %y\n";
    std::string unfused = head + "  %m = MatMul(%a, %b)  # m\n  " + c.onnx_line + "\n  return %y\n";
    expect_same(fused, unfused);
  }
}

TEST(FusedAttention, MatchesTheUnfusedSubgraph4DWithMask) {
  expect_same(R"(graph g (%q: float32[2,3,4,8], %k: float32[2,3,5,8], %v: float32[2,3,5,6], %mask: float32[4,5])
  %y = com.ferry.FusedAttention(%q, %k, %v, %mask) {scale=0.35}  # f
  return %y
)",
              R"(graph g (%q: float32[2,3,4,8], %k: float32[2,3,5,8], %v: float32[2,3,5,6], %mask: float32[4,5])
  const %s: float32[] = [0.35]
  %kt = Transpose(%k) {perm=[0,1,3,2]}  # t
  %qk = MatMul(%q, %kt)  # m1
  %sc = Mul(%qk, %s)  # mul
  %ms = Add(%sc, %mask)  # add
  %p = Softmax(%ms) {axis=-1}  # sm
  %y = MatMul(%p, %v)  # m2
  return %y
)");
}

TEST(FusedAttention, DefaultScaleIsInverseSqrtDAndRejectsBadShapes) {
  expect_same(R"(graph g (%q: float32[6,4,16], %k: float32[6,7,16], %v: float32[6,7,3])
  %y = com.ferry.FusedAttention(%q, %k, %v)  # f
  return %y
)",
              R"(graph g (%q: float32[6,4,16], %k: float32[6,7,16], %v: float32[6,7,3])
  const %s: float32[] = [4.0]
  %kt = Transpose(%k) {perm=[0,2,1]}  # t
  %qk = MatMul(%q, %kt)  # m1
  %sc = Div(%qk, %s)  # div
  %p = Softmax(%sc) {axis=-1}  # sm
  %y = MatMul(%p, %v)  # m2
  return %y
)");
  auto m = parse(R"(graph g (%q: float32[6,4,16], %k: float32[5,7,16], %v: float32[6,7,3])
  %y = com.ferry.FusedAttention(%q, %k, %v)  # f
  return %y
)");
  auto s = runtime::Session::from_model(std::move(m));
  ASSERT_TRUE(s.ok());
  auto r = (*s)->run_tensors(random_inputs((*s)->graph()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("batch dims"), std::string::npos) << r.status().to_string();
}

TEST(PostOps, ReaderChecksLengthsAndSum) {
  ir::Graph g;
  ir::Node* n = g.add_node("FusedConv", "f");
  ir::Attribute names;
  names.kind = ir::Attribute::Kind::kStrings;
  names.strings = {"sum", "Relu", "sum"};
  n->attrs["post_ops"] = names;
  EXPECT_FALSE(ops::read_post_ops(*n).ok());
  n->attrs["post_ops"].strings = {"sum", "Relu"};
  ir::Attribute alpha;
  alpha.kind = ir::Attribute::Kind::kFloats;
  alpha.floats = {0};
  n->attrs["post_op_alpha"] = alpha;
  EXPECT_FALSE(ops::read_post_ops(*n).ok());
  n->attrs["post_op_alpha"].floats = {0, 0};
  auto p = ops::read_post_ops(*n);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(ops::has_sum(*p));
  EXPECT_TRUE(ops::is_known_post_op("GeluTanh"));
  EXPECT_FALSE(ops::is_known_post_op("relu"));
}

}  // namespace
}  // namespace ferry::passes::testing
