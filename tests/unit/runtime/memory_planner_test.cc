// The memory planner: sharing, never overlapping live buffers (property-checked on random request
// sets), alignment, in-place reuse, and errors instead of overflow for absurd sizes.
#include "runtime/memory_planner.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace ferry::runtime {
namespace {

BufferRequest req(std::string name, size_t bytes, int first, int last, int inplace = -1) {
  return BufferRequest{std::move(name), bytes, first, last, inplace};
}

bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

// Every pair of requests live at the same time occupies disjoint bytes, except an honoured in-place
// pair; every buffer lies inside the arena at an aligned offset. Returns the first violation.
std::string check_plan(const std::vector<BufferRequest>& rs, const MemoryPlan& p) {
  if (p.offsets.size() != rs.size()) return "wrong number of offsets";
  for (size_t i = 0; i < rs.size(); ++i) {
    if (p.offsets[i] % p.alignment) return rs[i].name + " is not aligned";
    if (p.offsets[i] + rs[i].bytes > p.arena_bytes) return rs[i].name + " ends past the arena";
    for (size_t j = i + 1; j < rs.size(); ++j) {
      if (!lifetimes_overlap(rs[i], rs[j]) || rs[i].bytes == 0 || rs[j].bytes == 0) continue;
      if (p.inplace_of[j] == static_cast<int>(i) || p.inplace_of[i] == static_cast<int>(j)) continue;
      bool disjoint = p.offsets[i] + rs[i].bytes <= p.offsets[j] || p.offsets[j] + rs[j].bytes <= p.offsets[i];
      if (!disjoint) return rs[i].name + " and " + rs[j].name + " are live together but share bytes";
    }
  }
  return "";
}

TEST(MemoryPlanner, EmptyInput) {
  auto p = plan_memory({});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->arena_bytes, 0u);
  EXPECT_EQ(p->naive_bytes, 0u);
  EXPECT_NE(format_plan({}, *p).find("arena: 0 B"), std::string::npos);
}

TEST(MemoryPlanner, DisjointLifetimesShare) {
  // a chain a -> b -> c -> d where each dies at its consumer: b and d may reuse a's bytes.
  std::vector<BufferRequest> rs = {req("a", 1000, 0, 1), req("b", 1000, 1, 2), req("c", 1000, 2, 3),
                                   req("d", 1000, 3, 4)};
  auto p = plan_memory(rs);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(check_plan(rs, *p), "");
  EXPECT_EQ(p->naive_bytes, 4u * 1024);
  EXPECT_EQ(p->arena_bytes, 2u * 1024);  // two live at a time, never more
  EXPECT_EQ(p->offsets[0], p->offsets[2]);
  EXPECT_EQ(p->offsets[1], p->offsets[3]);
}

TEST(MemoryPlanner, OverlappingLifetimesNeverShare) {
  std::vector<BufferRequest> rs = {req("a", 100, 0, 5), req("b", 100, 1, 2), req("c", 100, 2, 6)};
  auto p = plan_memory(rs);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(check_plan(rs, *p), "");
  EXPECT_EQ(p->arena_bytes, 3u * 64 * 2);  // 100 rounds up to 128; all three live at node 2
}

TEST(MemoryPlanner, SmallBufferFillsTheBestGap) {
  // big1 and big2 live throughout with a 256-byte hole between them (left by a dead buffer).
  std::vector<BufferRequest> rs = {req("big1", 4096, 0, 9), req("hole", 256, 0, 1), req("big2", 4096, 0, 9),
                                   req("late", 200, 5, 6)};
  auto p = plan_memory(rs);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(check_plan(rs, *p), "");
  EXPECT_EQ(p->offsets[3], p->offsets[1]);  // "late" reuses the hole instead of growing the arena
  EXPECT_EQ(p->arena_bytes, 4096u * 2 + 256);
}

TEST(MemoryPlanner, Alignment) {
  std::vector<BufferRequest> rs = {req("a", 1, 0, 3), req("b", 65, 1, 3), req("c", 3, 2, 3)};
  auto p = plan_memory(rs);
  ASSERT_TRUE(p.ok());
  for (size_t o : p->offsets) EXPECT_EQ(o % 64, 0u);
  EXPECT_EQ(p->naive_bytes, 64u + 128 + 64);
  auto p16 = plan_memory(rs, 16);
  ASSERT_TRUE(p16.ok());
  EXPECT_EQ(p16->naive_bytes, 16u + 80 + 16);
  EXPECT_FALSE(plan_memory(rs, 48).ok());
  EXPECT_FALSE(plan_memory(rs, 0).ok());
}

TEST(MemoryPlanner, InPlace) {
  // x -> Relu -> y -> Add(y, z) -> w: y may overwrite x, w may overwrite y (chain); z is live throughout.
  std::vector<BufferRequest> rs = {req("x", 512, 0, 1), req("z", 512, 0, 2), req("y", 512, 1, 2, 0),
                                   req("w", 512, 2, 3, 2)};
  auto p = plan_memory(rs);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(check_plan(rs, *p), "");
  EXPECT_EQ(p->inplace_of[2], 0);
  EXPECT_EQ(p->inplace_of[3], 2);
  EXPECT_EQ(p->offsets[0], p->offsets[2]);
  EXPECT_EQ(p->offsets[2], p->offsets[3]);
  EXPECT_EQ(p->arena_bytes, 1024u);
  EXPECT_NE(format_plan(rs, *p).find("in place of x"), std::string::npos);
}

TEST(MemoryPlanner, InPlaceOnlyWhenSafe) {
  std::vector<BufferRequest> rs = {
      req("x", 512, 0, 2),        // still read after node 1: y may not overwrite it
      req("y", 512, 1, 3, 0),
      req("small", 64, 1, 2),     // dies at node 2 but is smaller than "big"
      req("big", 1024, 2, 3, 2),
      req("s2", 256, 2, 4),
      req("t", 256, 4, 5, 4),     // s2 dies at 4: fine
      req("t2", 256, 4, 5, 4),    // s2 already taken by t
  };
  auto p = plan_memory(rs);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(check_plan(rs, *p), "");
  EXPECT_EQ(p->inplace_of[1], -1);
  EXPECT_EQ(p->inplace_of[3], -1);
  EXPECT_EQ(p->inplace_of[5], 4);
  EXPECT_EQ(p->inplace_of[6], -1);
  EXPECT_NE(p->offsets[5], p->offsets[6]);
}

TEST(MemoryPlanner, BadRequestsAreErrors) {
  EXPECT_FALSE(plan_memory({req("a", 8, 3, 2)}).ok());
  EXPECT_FALSE(plan_memory({req("a", 8, 0, 2, 5)}).ok());
  EXPECT_FALSE(plan_memory({req("a", 8, 0, 2, 0)}).ok());
}

TEST(MemoryPlanner, HugeSizesDoNotOverflow) {
  const size_t huge = std::numeric_limits<size_t>::max() / 2 + 1;
  // Too large to align.
  EXPECT_FALSE(plan_memory({req("a", std::numeric_limits<size_t>::max() - 3, 0, 1)}).ok());
  // Two huge buffers live together cannot fit any address space.
  auto both = plan_memory({req("a", huge, 0, 2), req("b", huge, 1, 2)});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().to_string().find("address"), std::string::npos);
  // Huge but never live together: naive sum overflows, so it is refused rather than wrapped.
  EXPECT_FALSE(plan_memory({req("a", huge, 0, 1), req("b", huge, 2, 3)}).ok());
  // Large but fine.
  const size_t big = size_t{1} << 40;
  auto p = plan_memory({req("a", big, 0, 1), req("b", big, 2, 3), req("c", big, 1, 2)});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->arena_bytes, 2 * big);
  EXPECT_EQ(p->naive_bytes, 3 * big);
}

// Property: on random request sets (random sizes, lifetimes, in-place hints), the plan never places two
// live buffers on the same bytes, and never needs more than one buffer per request.
TEST(MemoryPlanner, RandomRequestSetsNeverOverlapLiveBuffers) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 500; ++trial) {
    const int n = static_cast<int>(rng() % 40);
    const int nodes = 1 + static_cast<int>(rng() % 30);
    std::vector<BufferRequest> rs;
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % nodes);
      int last = first + static_cast<int>(rng() % (nodes - first));
      size_t bytes = (rng() % 4 == 0) ? rng() % 64 : rng() % 100000;
      int inplace = (i > 0 && rng() % 3 == 0) ? static_cast<int>(rng() % i) : -1;
      rs.push_back(req("t" + std::to_string(i), bytes, first, last, inplace));
    }
    auto p = plan_memory(rs);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_EQ(check_plan(rs, *p), "") << "trial " << trial << "\n" << format_plan(rs, *p);
    EXPECT_LE(p->arena_bytes, p->naive_bytes);
    // In-place is only ever granted to a buffer over one that dies at its producer.
    for (int i = 0; i < n; ++i)
      if (int k = p->inplace_of[i]; k >= 0) {
        EXPECT_EQ(rs[i].inplace_candidate, k);
        EXPECT_EQ(rs[k].last_use, rs[i].first_use);
        EXPECT_LT(rs[k].first_use, rs[i].first_use);
      }
  }
}

}  // namespace
}  // namespace ferry::runtime
