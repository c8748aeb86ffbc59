// The level pipelines: what each level does, subgraph bodies, reports, provenance.
#include <fstream>
#include <set>
#include <sstream>

#include "pass_test_util.h"

namespace ferry::passes::testing {
namespace {

const char* kGraph = R"(opset "" 13
graph g (%x: float32[batch,2,4,4])
  const %w: float32[2,2,3,3]
  const %s: float32[2]
  const %b: float32[2]
  const %mu: float32[2]
  const %v: float32[2] = uniform(0.5, 1.5)
  const %k: float32[2] = [1.0,2.0]
  const %kk: float32[2] = [3.0,4.0]
  %kc = Add(%k, %kk)  # const_add
  %c = Conv(%x, %w) {pads=[1,1,1,1]}  # conv
  %n = BatchNormalization(%c, %s, %kc, %mu, %v)  # bn
  %i = Identity(%n)  # ident
  %y = Relu(%i)  # relu
  return %y
)";

std::unique_ptr<ir::Model> optimized(int level, std::vector<PassReport>* report = nullptr) {
  auto m = parse(kGraph);
  OptimizeOptions o;
  o.opt_level = level;
  o.input_shapes["x"] = {1, 2, 4, 4};
  Status st = optimize(*m, o, report);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return m;
}

TEST(Pipeline, LevelZeroOnlyFixesInputShapes) {
  auto m = optimized(0);
  EXPECT_EQ(m->graph->nodes.size(), 5u);
  EXPECT_EQ(shape_to_string(*m->graph->inputs[0]->shape), "[1,2,4,4]");
  EXPECT_EQ(shape_to_string(*m->graph->outputs[0]->shape), "[1,2,4,4]");
}

TEST(Pipeline, LevelOneCleansUpButDoesNotFuse) {
  std::vector<PassReport> report;
  auto m = optimized(1, &report);
  const ir::Graph& g = *m->graph;
  EXPECT_EQ(count_op(g, "Identity"), 0);
  EXPECT_EQ(count_op(g, "Add"), 0);  // folded
  EXPECT_EQ(count_op(g, "BatchNormalization"), 1);
  EXPECT_EQ(count_op(g, "Conv"), 1);
  bool saw_fold = false;
  for (const auto& r : report) {
    saw_fold = saw_fold || (r.pass == "fold_constants" && r.changes == 1);
    EXPECT_NE(r.pass, "fuse_conv_post_ops");
  }
  EXPECT_TRUE(saw_fold);
  EXPECT_EQ(g.outputs[0]->name, "y");
}

TEST(Pipeline, LevelTwoFusesAndMatchesLevelZero) {
  auto m = optimized(2);
  const ir::Graph& g = *m->graph;
  ASSERT_EQ(count_op(g, "FusedConv"), 1);
  EXPECT_EQ(count_op(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_op(g, "Relu"), 0);
  EXPECT_EQ(m->opset_for("com.ferry"), 1);
  // Provenance: the fused node stands for conv, bn, ident (whose removal at level 1 handed its name to
  // bn) and relu, in graph order; const_add was folded into a constant.
  EXPECT_EQ(find_op(g, "FusedConv")->provenance, (std::vector<std::string>{"conv", "bn", "ident", "relu"}));
  EXPECT_EQ(find_op(g, "FusedConv")->name, "relu");
  EXPECT_EQ(g.outputs[0]->name, "y");
  auto ref = optimized(0);
  auto in = random_inputs(*ref->graph);
  expect_close(run_reference(std::move(m), in), run_reference(std::move(ref), in));
}

TEST(Pipeline, ProvenanceIsNeverDroppedByFusions) {
  // A graph where nothing folds or is dead: every original node name survives in some provenance list,
  // each list in the original order.
  std::ifstream f(std::string(FERRY_SOURCE_DIR) + "/tests/passes/level2_pipeline.ir");
  std::stringstream buf;
  buf << f.rdbuf();
  auto before = parse(buf.str());
  auto after = parse(buf.str());
  ASSERT_TRUE(before && after);
  OptimizeOptions o;
  o.opt_level = 2;
  o.input_shapes["x"] = {1, 2, 4, 4};
  ASSERT_TRUE(optimize(*after, o).ok());
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < before->graph->nodes.size(); ++i) order[before->graph->nodes[i]->name] = i;
  std::set<std::string> seen;
  for (const auto& n : after->graph->nodes) {
    for (size_t i = 0; i < n->provenance.size(); ++i) {
      seen.insert(n->provenance[i]);
      if (i) EXPECT_LT(order[n->provenance[i - 1]], order[n->provenance[i]]) << n->label();
    }
  }
  for (const auto& [name, idx] : order) EXPECT_TRUE(seen.count(name)) << "lost " << name;
}

TEST(Pipeline, SubgraphBodiesGetCleanupOnly) {
  auto m = parse(R"(opset "" 13
graph g (%x: float32[1,2,3,3], %c: bool[])
  const %w: float32[2,2,1,1]
  %y = If(%c) {else_branch=graph, then_branch=graph}  # if1
    graph else_b ()
      %i = Identity(%x)  # body_ident
      %cv = Conv(%i, %w)  # body_conv
      %r = Relu(%cv)  # body_relu
      return %r
    graph then_b ()
      return %x
  return %y
)");
  OptimizeOptions o;
  o.opt_level = 2;
  ASSERT_TRUE(optimize(*m, o).ok());
  const ir::Graph* body = m->graph->nodes[0]->attr_graph("else_branch");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(count_op(*body, "Identity"), 0);
  EXPECT_EQ(count_op(*body, "Conv"), 1);
  EXPECT_EQ(count_op(*body, "Relu"), 1);
}

TEST(Pipeline, BadOptionsAreErrors) {
  auto m = parse(kGraph);
  OptimizeOptions o;
  o.input_shapes["nope"] = {1};
  Status st = optimize(*m, o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("'nope'"), std::string::npos);
  o.input_shapes.clear();
  o.opt_level = 7;
  EXPECT_FALSE(optimize(*m, o).ok());
}

}  // namespace
}  // namespace ferry::passes::testing
