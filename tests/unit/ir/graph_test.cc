#include <gtest/gtest.h>

#include "ir/graph.h"

namespace ferry::ir {
namespace {

// x -> Relu -> y, built by hand.
std::unique_ptr<Graph> relu_graph() {
  auto g = std::make_unique<Graph>();
  g->name = "g";
  Value* x = g->add_value("x");
  x->dtype = DType::kFloat32;
  x->shape = Shape{Dim::symbolic("batch"), 4};
  x->is_graph_input = true;
  g->inputs.push_back(x);
  Node* n = g->add_node("Relu", "relu1");
  n->provenance = {"relu1"};
  n->inputs.push_back(x);
  Value* y = g->add_value("y");
  y->producer = n;
  y->producer_output = 0;
  n->outputs.push_back(y);
  g->outputs.push_back(y);
  return g;
}

TEST(Verify, AcceptsAWellFormedGraph) {
  auto g = relu_graph();
  EXPECT_TRUE(verify(*g).ok());
}

TEST(Verify, RejectsAUseBeforeDefinition) {
  auto g = relu_graph();
  Value* ghost = g->add_value("ghost");
  g->nodes[0]->inputs.push_back(ghost);
  Status s = verify(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.to_string().find("ghost"), std::string::npos);
}

TEST(Verify, SubgraphsSeeOuterValues) {
  auto g = relu_graph();
  auto body = std::make_shared<Graph>();
  body->parent = g.get();
  Node* inner = body->add_node("Neg", "neg");
  inner->inputs.push_back(g->find_value("y"));
  Value* z = body->add_value("z");
  z->producer = inner;
  z->producer_output = 0;
  inner->outputs.push_back(z);
  body->outputs.push_back(z);
  Node* iff = g->add_node("If", "if1");
  iff->inputs.push_back(g->find_value("x"));
  Attribute a;
  a.kind = Attribute::Kind::kGraph;
  a.g = body;
  iff->attrs["then_branch"] = a;
  EXPECT_TRUE(verify(*g).ok()) << verify(*g).to_string();
  EXPECT_EQ(body->find_value("x"), g->find_value("x"));  // outer-scope lookup
}

TEST(Printer, ShowsTypesAndNames) {
  auto g = relu_graph();
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("%x: float32[batch,4]"), std::string::npos) << text;
  EXPECT_NE(text.find("= Relu(%x)"), std::string::npos) << text;
  EXPECT_NE(text.find("# relu1"), std::string::npos) << text;
}


// A model with an If whose branches read an outer value: the copy is equal in text, shares no Value
// or Node with the original, and its subgraphs point into the copy (a pass on the copy cannot touch
// the original).
TEST(Clone, CopiesDeeplyWithSubgraphsAndProvenance) {
  const char* kText = R"(graph main (%x: float32[2,3], %s: bool)
  const %w: float32[2,3] = [1,2,3,4,5,6]
  %y: float32[2,3] = Add(%x, %w)  # add1
  %c = If(%s) {else_branch=graph, then_branch=graph}  # if1
    graph else_b ()
      %e = Neg(%y)  # n1
      return %e
    graph then_b ()
      return %y
  return %c, %y
)";
  auto m = parse_model(kText);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  (*m)->graph->nodes[0]->provenance = {"add1", "bn7"};
  (*m)->source_path = "model.onnx";
  auto c = (*m)->clone();
  EXPECT_EQ(print_model(*c), print_model(**m));
  EXPECT_EQ(c->source_path, "model.onnx");
  EXPECT_EQ(c->graph->nodes[0]->provenance, (std::vector<std::string>{"add1", "bn7"}));
  EXPECT_TRUE(verify(*c->graph).ok());
  for (size_t i = 0; i < c->graph->values.size(); ++i) {
    EXPECT_NE(c->graph->values[i].get(), (*m)->graph->values[i].get());
    EXPECT_EQ(c->graph->values[i]->graph, c->graph.get());
  }
  const Node& copy_if = *c->graph->nodes[1];
  const Graph* else_b = copy_if.attr_graph("else_branch");
  ASSERT_NE(else_b, nullptr);
  EXPECT_NE(else_b, (*m)->graph->nodes[1]->attr_graph("else_branch"));
  EXPECT_EQ(else_b->parent, c->graph.get());
  // The branch's outer reference is the copy's %y, not the original's.
  EXPECT_EQ(else_b->nodes[0]->inputs[0], c->graph->find_local_value("y"));
  EXPECT_EQ(c->graph->find_local_value("y")->producer, c->graph->nodes[0].get());
  // Changing the copy leaves the original as it was.
  c->graph->nodes[0]->op_type = "Sub";
  EXPECT_EQ((*m)->graph->nodes[0]->op_type, "Add");
  // Constants share their (immutable) buffer.
  EXPECT_EQ(c->graph->find_local_value("w")->initializer.raw(), (*m)->graph->find_local_value("w")->initializer.raw());
}

}  // namespace
}  // namespace ferry::ir
