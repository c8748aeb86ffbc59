// `inspect --plan`'s report from a prepared Session: nodes with kernels, the memory plan, JSON fields.
#include "tools/inspect_plan.h"

#include <gtest/gtest.h>

#include "unit/runtime/tiny_model.h"

namespace ferry::tools {
namespace {

TEST(InspectPlan, DescribesNodesKernelsAndMemory) {
  runtime::testing::TinyModel t;
  t.input("x", {2, 4});
  t.node("Relu", {"x"}, {"a"}, "relu");
  t.node("Neg", {"a"}, {"b"}, "neg");
  t.node("Abs", {"b"}, {"y"}, "abs");
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ModelPlan p = describe_plan(**s);
  ASSERT_EQ(p.nodes.size(), 3u);
  EXPECT_EQ(p.nodes[1].name, "neg");
  EXPECT_EQ(p.nodes[1].kernel, "reference");
  EXPECT_EQ(p.nodes[1].covers, std::vector<std::string>{"neg"});
  EXPECT_EQ(p.nodes[1].outputs, std::vector<std::string>{"b: float32[2,4]"});
  EXPECT_EQ(p.kernel_counts["reference"], 3);
  ASSERT_EQ(p.buffers.size(), 2u);  // a and b; y is a graph output
  EXPECT_EQ(p.buffers[0].value, "a");
  EXPECT_EQ(p.buffers[0].first_use, 0);
  EXPECT_EQ(p.buffers[0].last_use, 1);
  EXPECT_NE(p.buffers[0].offset, p.buffers[1].offset);  // live together at node 1
  EXPECT_EQ(p.arena_bytes, 128u);
  EXPECT_EQ(p.peak_live_bytes, 128u);
  EXPECT_EQ(p.naive_bytes, 128u);
  EXPECT_FALSE(p.refined);
  std::string text = format_model_plan(p);
  for (const char* needle : {"neg", "Neg", "reference", "b: float32[2,4]", "arena: ", "weights: "})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  auto j = model_plan_to_json(p);
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["memory"]["arena_bytes"], 128u);
  EXPECT_EQ(j["memory"]["buffers"][1]["value"], "b");
}

}  // namespace
}  // namespace ferry::tools
