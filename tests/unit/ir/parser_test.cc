// The IR text parser: what the printer writes reads back to the same graph, and bad text is an error
// that names the line.
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace ferry::ir {
namespace {

const char* kText = R"(opset "" 17
opset com.ferry 1
// a comment line
graph main (%x: float32[batch,3,4,4], %"odd name": int64[2], %s: float32)
  const %w: float32[2,3,1,1] = [0.5,-1.0,2.0,1e-05,3.0,0.25]
  const %big: float32[100]
  const %shape: int64[2] = [1,-1]
  %y: float32[batch,2,4,4] = Conv(%x, %w) {dilations=[1,1], pads=[0,0,0,0]}  # conv1
  %r = Relu(%y)  # relu1 from conv1 relu1
  %t: float32 onnx="orig_t" = Reshape(%r, %shape)  # "re shape"
  %a, _ = Dropout(%t)  # drop
  %f = com.ferry.FusedMatMul(%a, %a, _) {alpha=0.125, post_ops=["Relu","Clip"], post_op_alpha=[0.0,0.0], post_op_beta=[0.0,6.0], trans_b=1}  # fm
  %g = Gelu@20(%f) {approximate="tanh"}  # g
  %c = If(%s) {else_branch=graph, then_branch=graph}  # if1
    graph else_b ()
      %e1 = Neg(%g)  # n1
      return %e1
    graph then_b ()
      return %g
  return %c, %y
)";

TEST(Parser, ReadsEveryConstruct) {
  auto m = parse_model(kText);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Model& model = **m;
  EXPECT_EQ(model.opset_for(""), 17);
  EXPECT_EQ(model.opset_for("com.ferry"), 1);
  const Graph& g = *model.graph;
  ASSERT_EQ(g.inputs.size(), 3u);
  EXPECT_EQ(g.inputs[1]->name, "odd name");
  EXPECT_FALSE(g.inputs[2]->shape.has_value());  // "float32": rank unknown
  ASSERT_TRUE(g.inputs[0]->shape);
  EXPECT_EQ((*g.inputs[0]->shape)[0].symbol, "batch");
  const Value* w = g.find_value("w");
  ASSERT_TRUE(w && w->is_constant());
  EXPECT_FLOAT_EQ(w->initializer.data<float>()[3], 1e-5f);
  const Value* big = g.find_value("big");
  ASSERT_TRUE(big && big->is_constant());
  EXPECT_EQ(big->initializer.numel(), 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_GE(big->initializer.data<float>()[i], -1.0f);
    EXPECT_LT(big->initializer.data<float>()[i], 1.0f);
  }
  ASSERT_EQ(g.nodes.size(), 7u);
  EXPECT_EQ(g.nodes[0]->attr_ints("pads").size(), 4u);
  EXPECT_EQ(g.nodes[1]->provenance, (std::vector<std::string>{"conv1", "relu1"}));
  EXPECT_EQ(g.nodes[0]->provenance, (std::vector<std::string>{"conv1"}));
  EXPECT_EQ(g.nodes[2]->name, "re shape");
  EXPECT_EQ(g.find_value("t")->onnx_name, "orig_t");
  EXPECT_EQ(g.nodes[3]->outputs[1], nullptr);
  const Node& fm = *g.nodes[4];
  EXPECT_EQ(fm.domain, "com.ferry");
  EXPECT_EQ(fm.op_type, "FusedMatMul");
  EXPECT_EQ(fm.opset, 1);
  EXPECT_EQ(fm.inputs[2], nullptr);
  EXPECT_FLOAT_EQ(fm.attr_float("alpha", 0), 0.125f);
  EXPECT_EQ(fm.attr("post_ops")->strings, (std::vector<std::string>{"Relu", "Clip"}));
  EXPECT_EQ(fm.attr_floats("post_op_beta")[1], 6.0f);
  EXPECT_EQ(g.nodes[5]->opset, 20);
  EXPECT_EQ(g.nodes[5]->attr_string("approximate", ""), "tanh");
  const Node& iff = *g.nodes[6];
  ASSERT_NE(iff.attr_graph("then_branch"), nullptr);
  EXPECT_EQ(iff.attr_graph("then_branch")->outputs[0], g.find_value("g"));  // outer-scope use
  EXPECT_EQ(iff.attr_graph("else_branch")->nodes.size(), 1u);
  EXPECT_EQ(g.outputs.size(), 2u);
}

TEST(Parser, RoundTripsThroughThePrinter) {
  auto m = parse_model(kText);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::string once = print_model(**m);
  auto m2 = parse_model(once);
  ASSERT_TRUE(m2.ok()) << m2.status().to_string() << "\n" << once;
  std::string twice = print_model(**m2);
  EXPECT_EQ(once, twice);
  // Constants too large to print come back with the same deterministic fill.
  EXPECT_TRUE((*m2)->graph->find_value("big")->initializer.same_as((*m)->graph->find_value("big")->initializer));
  EXPECT_TRUE((*m2)->graph->find_value("w")->initializer.same_as((*m)->graph->find_value("w")->initializer));
}

TEST(Parser, ExplicitUniformFillAndDefaults) {
  auto m = parse_model(R"(graph g (%x: float32[4])
  const %v: float32[4] = uniform(0.5, 1.5)
  const %k: int64[3]
  const %b: bool[2] = [true, false]
  %y = Add(%x, %v)
  return %y
)");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->opset_for(""), 17);
  const Tensor& v = (*m)->graph->find_value("v")->initializer;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(v.data<float>()[i] >= 0.5f && v.data<float>()[i] < 1.5f);
  const Tensor& k = (*m)->graph->find_value("k")->initializer;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(k.data<int64_t>()[i] >= 0 && k.data<int64_t>()[i] < 10);
  const Tensor& b = (*m)->graph->find_value("b")->initializer;
  EXPECT_EQ(b.as_int64(0), 1);
  EXPECT_EQ(b.as_int64(1), 0);
  EXPECT_EQ((*m)->graph->nodes[0]->name, "");
}

void expect_error(const std::string& text, const std::string& needle) {
  auto m = parse_model(text);
  ASSERT_FALSE(m.ok()) << text;
  EXPECT_NE(m.status().to_string().find(needle), std::string::npos) << m.status().to_string();
}

TEST(Parser, BadInputNamesTheLine) {
  expect_error("graph g (%x: float32[2])\n  %y = Relu(%z)\n  return %y\n", "line 2");
  expect_error("graph g (%x: float32[2])\n  %y = Relu(%z)\n  return %y\n", "'%z' is not defined");
  expect_error("graph g (%x: flot32[2])\n  return %x\n", "unknown element type 'flot32'");
  expect_error("graph g (%x: float32[2])\n  const %c: float32[3] = [1.0, 2.0]\n  return %x\n", "needs 3 values");
  expect_error("graph g (%x: float32[2])\n  %y = Relu(%x)\n", "no 'return'");
  expect_error("graph g (%x: float32[2])\n  %x = Relu(%x)\n  return %x\n", "defined twice");
  expect_error("graph g (%x: float32[2])\n  %y = Relu(%x) {a=1, a=2}\n  return %y\n", "given twice");
  expect_error("graph g (%x: float32[2])\n  %y = Relu(%x) junk\n  return %y\n", "line 2: unexpected text");
  expect_error("graph g (%x: float32[2])\n  %y = custom.Op(%x)\n  return %y\n", "no opset for domain 'custom'");
  expect_error("graph g (%x: float32[2])\n  return %x\ngraph h ()\n  return\n", "line 3: text after the main graph");
  expect_error("", "no graph");
  expect_error("graph g (%x: float32[2])\n  const %c: float32[?] = [1.0]\n  return %x\n", "static dims");
  expect_error("graph g (%x: float32[2])\n  %y = If(%x) {then_branch=graph}\n  return %y\n", "line 3: expected 'graph'");
  expect_error("graph g (%x: float32[2])\n  %y = Relu(%x)  # \"unterminated\n  return %y\n", "unterminated string");
}

TEST(Parser, DeepNestingAndHugeConstantsAreErrors) {
  std::string text = "graph g (%c: bool[])\n";
  for (int i = 0; i < 100; ++i) text += "  %y = If(%c) {then_branch=graph}  # n\ngraph b ()\n";
  expect_error(text, "nested deeper");
  expect_error("graph g ()\n  const %c: float32[100000,100000]\n  return %c\n", "too large");
}

}  // namespace
}  // namespace ferry::ir
