// The partitioner: a model with an op the target lacks is rewritten (one device subgraph, no transfers)
// or placed on the host (transfers at both borders, counted in bytes), and in both cases its outputs
// still match the reference run of the original graph.
#include <gtest/gtest.h>

#include "unit/passes/pass_test_util.h"
#include "targets/partition.h"

namespace ferry::targets {
namespace {

using passes::testing::expect_close;
using passes::testing::parse;
using passes::testing::random_inputs;
using passes::testing::run_reference;

const char* kConvMishConv = R"(opset "" 18
graph g (%x: float32[1,3,8,8])
  const %w1: float32[4,3,3,3]
  const %w2: float32[4,4,3,3]
  %a = Conv(%x, %w1) {pads=[1,1,1,1]}  # conv1
  %b = Mish(%a)  # mish
  %c = Conv(%b, %w2) {pads=[1,1,1,1]}  # conv2
  return %c
)";

TEST(Partition, MissingOpWithRuleIsRewrittenWithoutPingPong) {
  auto t = load_target("ascend310p");
  auto host = load_target("cpu");
  ASSERT_TRUE(t.ok() && host.ok());
  auto before = parse(kConvMishConv), after = parse(kConvMishConv);
  ASSERT_TRUE(before && after);
  auto p = partition(*after, *t, &*host);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->host_nodes, 0);
  EXPECT_EQ(p->unsupported_nodes, 0);
  EXPECT_EQ(p->segments.size(), 1u);
  EXPECT_TRUE(p->transfers.empty());
  ASSERT_EQ(p->rewrites.size(), 1u);
  EXPECT_EQ(p->rewrites[0].rule, "legalize_mish");
  EXPECT_EQ(p->input_bytes, 1 * 3 * 8 * 8 * 4);
  EXPECT_EQ(p->output_bytes, 1 * 4 * 8 * 8 * 4);
  for (const auto& n : after->graph->nodes) {
    EXPECT_NE(n->op_type, "Mish");
    if (n->op_type == "Tanh") {
      EXPECT_EQ(n->provenance, std::vector<std::string>{"mish"});
    }
  }
  auto inputs = random_inputs(*before->graph);
  expect_close(run_reference(std::move(after), inputs), run_reference(std::move(before), inputs), 1e-5);
}

TEST(Partition, MissingOpWithoutRuleGoesToTheHostWithTransfers) {
  // A device without Relu and no rule for it: conv1 | relu (host) | conv2.
  auto t = parse_target(R"({"name": "norelu", "base": "ascend310p", "remove_ops": ["Relu", "Mish"]})", "norelu.json");
  auto host = load_target("cpu");
  ASSERT_TRUE(t.ok() && host.ok()) << t.status().to_string();
  std::string text = kConvMishConv;
  text.replace(text.find("Mish(%a)  # mish"), 16, "Relu(%a)  # relu");
  auto before = parse(text), after = parse(text);
  auto p = partition(*after, *t, &*host);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->host_nodes, 1);
  ASSERT_EQ(p->segments.size(), 3u);
  EXPECT_TRUE(p->segments[0].device);
  EXPECT_FALSE(p->segments[1].device);
  ASSERT_EQ(p->transfers.size(), 2u);
  EXPECT_FALSE(p->transfers[0].to_device);
  EXPECT_TRUE(p->transfers[1].to_device);
  EXPECT_EQ(p->transfer_bytes, 2 * 4 * 8 * 8 * 4);
  EXPECT_NE(p->by_name.at("relu").reason.find("not in norelu's operator list"), std::string::npos);
  auto inputs = random_inputs(*before->graph);
  expect_close(run_reference(std::move(after), inputs), run_reference(std::move(before), inputs), 1e-5);
}

TEST(Partition, DeviceNodesAreGroupedIntoMaximalRuns) {
  // Two independent chains, each device -> host -> device as written interleaved: regrouping runs the
  // two device heads together, then both host nodes, then both tails.
  auto t = parse_target(R"({"name": "nosig", "base": "ascend310p", "remove_ops": ["Sigmoid"]})", "nosig.json");
  auto host = load_target("cpu");
  ASSERT_TRUE(t.ok() && host.ok());
  const char* text = R"(opset "" 13
graph g (%x: float32[2,8], %y: float32[2,8])
  %a = Relu(%x)  # a_relu
  %b = Sigmoid(%a)  # a_sig
  %c = Abs(%b)  # a_abs
  %d = Relu(%y)  # b_relu
  %e = Sigmoid(%d)  # b_sig
  %f = Abs(%e)  # b_abs
  return %c, %f
)";
  auto before = parse(text), after = parse(text);
  auto p = partition(*after, *t, &*host);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->segments.size(), 3u);
  auto inputs = random_inputs(*before->graph);
  expect_close(run_reference(std::move(after), inputs), run_reference(std::move(before), inputs), 1e-6);
}

}  // namespace
}  // namespace ferry::targets
