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

}  // namespace
}  // namespace ferry::ir
