// `ferry profile`'s flags: a node far below the fp32 peak that takes a real share of the time (with the
// rate at which it moves its bytes, where known), and any oneDNN reference implementation, are named;
// fast nodes, small ones and nodes without FLOPs are not.
#include <gtest/gtest.h>

#include "tools/profile.h"

namespace ferry::tools {
namespace {

NodeProfile node(const std::string& name, const std::string& kernel, double ms, double share, double flops) {
  NodeProfile n;
  n.node = name;
  n.kernel = kernel;
  n.mean_ms = ms;
  n.share = share;
  n.flops = flops;
  return n;
}

TEST(ProfileFlags, SlowKernelsWithAShareAndReferenceImplementations) {
  ProfileReport r;
  // 1 ms each; peak 100 GFLOP/s, so below 5 GFLOP/s (5e6 FLOPs in 1 ms) is slow.
  r.nodes = {node("fast", "cpu:onednn:conv", 1, 0.30, 50e6),      // 50 GFLOP/s
             node("slow", "cpu:onednn:binary", 1, 0.25, 1e6),     // 1 GFLOP/s, 25%
             node("slow_small", "cpu:onednn:binary", 1, 0.01, 1e6),  // 1% of the time: not worth a flag
             node("no_flops", "cpu:concat", 1, 0.20, -1),         // memory-bound, no estimate
             node("ref", "cpu:onednn:matmul:ref:any", 1, 0.01, 1e6)};
  auto flags = flag_slow_nodes(r, 100);
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0].node, "slow");  // largest share first
  EXPECT_NE(flags[0].reason.find("1.0% of this machine's fp32 peak"), std::string::npos) << flags[0].reason;
  EXPECT_EQ(flags[0].reason.find("GB/s"), std::string::npos) << "no bytes known: no rate";
  // With the bytes it moves (a weight read once per run): the rate, for the reader to set against the
  // machine's memory bandwidth.
  r.nodes[1].bytes = 20e6;  // 20 MB in 1 ms
  flags = flag_slow_nodes(r, 100);
  EXPECT_NE(flags[0].reason.find("it moves 20.0 MB (inputs, weights, outputs) at 20.0 GB/s"), std::string::npos)
      << flags[0].reason;
  EXPECT_EQ(flags[1].node, "ref");
  EXPECT_NE(flags[1].reason.find("reference implementation"), std::string::npos);
  // Unknown peak: only the reference implementation.
  flags = flag_slow_nodes(r, 0);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].node, "ref");
  // Both rendered in the report's text.
  r.flags = flag_slow_nodes(r, 100);
  const std::string text = format_profile(r);
  EXPECT_NE(text.find("flagged: 2 node(s)"), std::string::npos) << text;
}

}  // namespace
}  // namespace ferry::tools
