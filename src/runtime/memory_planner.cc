#include "runtime/memory_planner.h"

#include <algorithm>
#include <limits>

#include <cstdio>

namespace ferry::runtime {

namespace {

constexpr size_t kMax = std::numeric_limits<size_t>::max();

// a + b, or false on overflow.
bool add_ok(size_t a, size_t b, size_t* out) {
  if (a > kMax - b) return false;
  *out = a + b;
  return true;
}

// One placed unit: an in-place chain of requests sharing one offset.
struct Group {
  size_t bytes = 0;  // aligned, max over members
  int first = 0, last = 0;
  std::vector<int> members;
  size_t offset = 0;
};

// (The runtime module does not link fmt; snprintf is enough for a table.)
std::string human_bytes(size_t b) {
  char buf[32];
  if (b >= (size_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= (size_t{1} << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%zu B", b);
  return buf;
}

std::string pad(std::string s, size_t w, bool left) {
  if (s.size() >= w) return s;
  return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

}  // namespace

Result<MemoryPlan> plan_memory(const std::vector<BufferRequest>& reqs, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return Status::invalid("memory plan alignment " + std::to_string(alignment) + " is not a power of two");
  const int n = static_cast<int>(reqs.size());
  MemoryPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(reqs.size(), 0);
  plan.inplace_of.assign(reqs.size(), -1);
  std::vector<size_t> aligned(reqs.size());
  for (int i = 0; i < n; ++i) {
    const BufferRequest& r = reqs[i];
    if (r.last_use < r.first_use)
      return Status::invalid("buffer '" + r.name + "' is last used (node " + std::to_string(r.last_use) +
                             ") before it is produced (node " + std::to_string(r.first_use) + ")");
    if (r.inplace_candidate < -1 || r.inplace_candidate >= n || r.inplace_candidate == i)
      return Status::invalid("buffer '" + r.name + "' names an invalid in-place candidate " +
                             std::to_string(r.inplace_candidate));
    if (!add_ok(r.bytes, alignment - 1, &aligned[i]))
      return Status::invalid("buffer '" + r.name + "' is too large to plan (" + std::to_string(r.bytes) + " bytes)");
    aligned[i] &= ~(alignment - 1);
    if (!add_ok(plan.naive_bytes, aligned[i], &plan.naive_bytes))
      return Status::invalid("the buffers' sizes add up past what this machine can address");
  }

  // In-place: j takes over i's bytes when i dies at the node producing j and is big enough. Each
  // buffer is taken over at most once, so the pairs form chains; a chain is placed as one group.
  std::vector<int> group_of(reqs.size(), -1);
  std::vector<bool> taken(reqs.size(), false);
  std::vector<int> order(reqs.size());
  for (int i = 0; i < n; ++i) order[i] = i;
  // Producers in node order, so a chain a -> b -> c links up before c looks at b.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return reqs[a].first_use < reqs[b].first_use; });
  std::vector<Group> groups;
  for (int j : order) {
    int i = reqs[j].inplace_candidate;
    if (i >= 0 && !taken[i] && group_of[i] >= 0 && reqs[i].first_use < reqs[j].first_use &&
        reqs[i].last_use == reqs[j].first_use && aligned[i] >= aligned[j]) {
      Group& g = groups[group_of[i]];
      // The chain's tail must be i itself, so no member of it is still live when j is written.
      if (g.members.back() == i) {
        taken[i] = true;
        plan.inplace_of[j] = i;
        group_of[j] = group_of[i];
        g.members.push_back(j);
        g.last = std::max(g.last, reqs[j].last_use);
        continue;
      }
    }
    group_of[j] = static_cast<int>(groups.size());
    Group g;
    g.bytes = aligned[j];
    g.first = reqs[j].first_use;
    g.last = reqs[j].last_use;
    g.members.push_back(j);
    groups.push_back(std::move(g));
  }

  // Greedy by size: largest first (ties: earlier producer, then request order, so plans are stable).
  std::vector<int> by_size(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) by_size[k] = static_cast<int>(k);
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) {
    if (groups[a].bytes != groups[b].bytes) return groups[a].bytes > groups[b].bytes;
    return groups[a].first < groups[b].first;
  });
  std::vector<int> placed;  // group indices, kept sorted by offset
  for (int k : by_size) {
    Group& g = groups[k];
    size_t best = kMax, best_gap = kMax, end = 0;
    for (int p : placed) {
      const Group& q = groups[p];
      if (q.last < g.first || g.last < q.first) continue;  // lifetimes do not overlap
      if (q.offset >= end && q.offset - end >= g.bytes && q.offset - end < best_gap) {
        best = end;
        best_gap = q.offset - end;
      }
      size_t q_end = q.offset + q.bytes;  // cannot overflow: checked when q was placed
      end = std::max(end, q_end);
    }
    g.offset = best != kMax ? best : end;
    size_t g_end;
    if (!add_ok(g.offset, g.bytes, &g_end))
      return Status::invalid("the memory plan's arena would be larger than this machine can address");
    plan.arena_bytes = std::max(plan.arena_bytes, g_end);
    auto at = std::upper_bound(placed.begin(), placed.end(), g.offset,
                               [&](size_t off, int p) { return off < groups[p].offset; });
    placed.insert(at, k);
  }
  for (const Group& g : groups)
    for (int m : g.members) plan.offsets[m] = g.offset;
  return plan;
}

std::string format_plan(const std::vector<BufferRequest>& reqs, const MemoryPlan& plan) {
  size_t w = 5;
  for (const auto& r : reqs) w = std::max(w, std::min<size_t>(r.name.size(), 60));
  std::string o = "  " + pad("value", w, true) + "  " + pad("bytes", 12, false) + "  " + pad("offset", 12, false) +
                  "  " + pad("nodes", 11, false) + "\n";
  for (size_t i = 0; i < reqs.size() && i < plan.offsets.size(); ++i) {
    const BufferRequest& r = reqs[i];
    std::string life = std::to_string(r.first_use) + ".." + std::to_string(r.last_use);
    o += "  " + pad(r.name, w, true) + "  " + pad(std::to_string(r.bytes), 12, false) + "  " +
         pad(std::to_string(plan.offsets[i]), 12, false) + "  " + pad(life, 11, false);
    if (plan.inplace_of[i] >= 0) o += "  in place of " + reqs[plan.inplace_of[i]].name;
    o += "\n";
  }
  double saved = plan.naive_bytes ? 100.0 * (1.0 - static_cast<double>(plan.arena_bytes) / plan.naive_bytes) : 0;
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.1f", saved);
  o += "arena: " + human_bytes(plan.arena_bytes) + " (" + std::to_string(plan.arena_bytes) + " bytes) for " +
       std::to_string(reqs.size()) + " buffer" + (reqs.size() == 1 ? "" : "s") + "; one buffer each would take " +
       human_bytes(plan.naive_bytes) + " (" + pct + "% saved)\n";
  return o;
}

}  // namespace ferry::runtime
