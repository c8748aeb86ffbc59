#include "tools/profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <omp.h>

#include <fmt/format.h>

#include "backends/cpu/isa_probe.h"
#include "passes/precision.h"
#include "runtime/executor.h"
#include "tools/bench.h"
#include "tools/check.h"
#include "tools/inspect.h"
#include "runtime/model_session.h"

namespace ferry::tools {

namespace {
using Clock = std::chrono::steady_clock;
double bytes_of(const RtValue& v) {
  if (v.is_tensor()) return static_cast<double>(v.tensor.nbytes());
  double b = 0;
  for (const Tensor& t : v.sequence) b += static_cast<double>(t.nbytes());
  return b;
}
}  // namespace

namespace {

std::string describe_transfers(const TransferProfile& t) {
  std::string s = fmt::format("target {}{}: {} node(s) on the device ({:.3f} ms), {} on the host ({:.3f} ms); per inference "
                              "inputs {} to the device, outputs {} back, {} value(s) at fallback borders {}",
                              t.target, t.emulated ? " (EMULATED)" : "", t.device_nodes, t.device_ms, t.host_nodes,
                              t.host_ms, bytes_text(t.input_bytes), bytes_text(t.output_bytes), t.borders,
                              bytes_text(t.border_bytes));
  if (t.emulated)
    s += t.estimated_us >= 0
             ? fmt::format("; transfer time not measured (no device here), ~{:.3g} us at {:g} GB/s (--link-gbps)", t.estimated_us,
                           t.link_gb_per_s)
             : "; transfer time not measured (no device here)";
  return s;
}

// Attributes the profiled nodes to a side by the placement the session was prepared with (one
// placement, one count: the same nodes `run` keeps fp32 on the host; for a .ferry file, the ones its
// compile placed there): a fused node is on the host when any ONNX node it covers is. `ferry check`'s
// analysis gives the transfer sizes.
Result<TransferProfile> profile_partition(const ProfileOptions& o, const runtime::PrepareReport& prepared,
                                          const std::map<std::string, std::vector<int64_t>>& shapes, ProfileReport& r) {
  CheckOptions co;
  co.target = prepared.target;
  co.input_shapes = shapes;
  FERRY_ASSIGN_OR_RETURN(CheckReport c, check_model(o.model, co));
  std::set<std::string> host;
  for (const auto& [name, p] : prepared.placement)
    if (p.placement == targets::Placement::kHost || p.placement == targets::Placement::kUnsupported) host.insert(name);
  TransferProfile t;
  t.target = c.target;
  t.emulated = c.emulated;
  for (NodeProfile& n : r.nodes) {
    bool on_host = host.count(n.node) > 0;
    for (const std::string& p : n.covers) on_host = on_host || host.count(p) > 0;
    n.placement = on_host ? "host" : "device";
    (on_host ? t.host_nodes : t.device_nodes)++;
    (on_host ? t.host_ms : t.device_ms) += n.mean_ms;
  }
  t.input_bytes = c.input_bytes;
  t.output_bytes = c.output_bytes;
  t.border_bytes = c.transfer_bytes;
  t.borders = c.transfers;
  t.link_gb_per_s = o.link_gb_per_s;
  if (t.emulated && t.input_bytes >= 0 && t.output_bytes >= 0 && t.border_bytes >= 0 && o.link_gb_per_s > 0)
    t.estimated_us = (t.input_bytes + t.output_bytes + t.border_bytes) / (o.link_gb_per_s * 1e3);
  return t;
}

}  // namespace

Result<ProfileReport> run_profile(const ProfileOptions& o) {
  if (o.runs < 1) return Status::invalid("--runs must be at least 1");
  FERRY_ASSIGN_OR_RETURN(auto runner, runtime::ModelSession::open(o.model, o.session));
  FERRY_ASSIGN_OR_RETURN(auto prepared, prepare_inputs(runner->graph(), o.inputs));
  std::map<std::string, RtValue> feeds;
  for (auto& p : prepared) feeds.emplace(p.name, RtValue(p.tensor));
  FERRY_ASSIGN_OR_RETURN(size_t which, runner->pick_session(feeds));
  runtime::Session& s = runner->session(which);
  const ir::Graph& g = s.graph();
  ProfileReport r;
  r.model = o.model;
  r.backend = o.session.backend;
  r.precision = s.precision_description();
  r.runs = o.runs;
  std::map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i].get()] = i;
  std::vector<double> total(g.nodes.size(), 0), bytes(g.nodes.size(), 0);
  for (int w = 0; w < o.warmup; ++w) FERRY_RETURN_IF_ERROR(s.run(feeds).status());

  int run = 0;
  Clock::time_point start, last;
  s.set_node_hook([&](const ir::Node& n, const std::vector<const RtValue*>& ins, const std::vector<RtValue>& outs) {
    const auto now = Clock::now();
    auto it = index.find(&n);
    if (it != index.end()) {
      const double dur = std::chrono::duration<double, std::micro>(now - last).count();
      total[it->second] += dur / 1000.0;
      double b = 0;
      for (const RtValue* v : ins)
        if (v) b += bytes_of(*v);
      for (const RtValue& v : outs) b += bytes_of(v);
      bytes[it->second] = b;
      if (r.trace.size() < 200000)
        r.trace.push_back({n.name, n.domain.empty() ? n.op_type : n.domain + "." + n.op_type, run,
                           std::chrono::duration<double, std::micro>(last - start).count(), dur});
    }
    last = Clock::now();  // the hook's own work is not the next node's time
  }, runtime::HookMode::kObserve);
  if (o.progress) o.progress(fmt::format("profiling {} run(s) ...", o.runs));
  start = Clock::now();
  for (run = 0; run < o.runs; ++run) {
    last = Clock::now();
    Status st = s.run(feeds).status();
    if (!st.ok()) {
      s.set_node_hook(nullptr);
      return st.with_context(o.model);
    }
  }
  s.set_node_hook(nullptr);

  double sum = 0;
  for (double t : total) sum += t;
  r.total_ms = sum / o.runs;
  const auto* plan = s.executor().main_plan();
  std::map<std::string, OpTypeProfile> types;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = *g.nodes[i];
    NodeProfile p;
    p.node = n.name;
    p.op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    p.kernel = plan ? plan->kernels[i]->name() : "";
    p.covers = n.provenance;
    p.mean_ms = total[i] / o.runs;
    p.share = sum > 0 ? total[i] / sum : 0;
    if (auto f = estimate_node_flops(n)) p.flops = *f;
    p.bytes = bytes[i];
    OpTypeProfile& t = types[p.op];
    t.op = p.op;
    t.nodes++;
    t.ms += p.mean_ms;
    t.share += p.share;
    if (p.flops > 0) t.flops += p.flops;
    r.nodes.push_back(std::move(p));
  }
  for (auto& [op, t] : types) r.by_type.push_back(t);
  std::sort(r.by_type.begin(), r.by_type.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  r.arena_bytes = s.executor().arena_bytes();
  r.peak_rss_bytes = peak_rss_bytes();
  for (const auto& v : g.values)
    if (v->is_constant()) r.weight_bytes += v->initializer.nbytes();
  if (o.session.backend == "cpu") {
    const int threads = o.session.backend_options.threads > 0 ? o.session.backend_options.threads : omp_get_max_threads();
    r.peak_gflops = backends::cpu::measure_fp32_peak_gflops(threads);
    r.flags = flag_slow_nodes(r, r.peak_gflops);
  }
  r.transfers = "none: every node runs on the " + o.session.backend + " backend in this process";
  if (!s.prepare_report().target.empty()) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, v] : feeds)
      if (v.is_tensor()) shapes[name] = v.tensor.dims();
    FERRY_ASSIGN_OR_RETURN(TransferProfile t, profile_partition(o, s.prepare_report(), shapes, r));
    r.transfers = describe_transfers(t);
    r.partition = std::move(t);
  }
  return r;
}

std::vector<ProfileFlag> flag_slow_nodes(const ProfileReport& r, double peak_gflops) {
  std::vector<ProfileFlag> flags;
  for (const NodeProfile& n : r.nodes) {
    std::string reason;
    if (n.kernel.find(":ref") != std::string::npos) {
      reason = "a oneDNN reference implementation";
    } else if (peak_gflops > 0 && n.flops > 0 && n.mean_ms > 0 && n.share > kSlowShare) {
      const double gflops = n.flops / (n.mean_ms * 1e6);
      if (gflops < kSlowFractionOfPeak * peak_gflops)
        reason = fmt::format("{:.2f} GFLOP/s is {:.1f}% of this machine's fp32 peak ({:.0f} GFLOP/s) while taking {:.1f}% "
                             "of the time", gflops, 100 * gflops / peak_gflops, peak_gflops, 100 * n.share);
      // A product that reads its weights once per run (a decoder step's Linear, a batch-1 head) is bound
      // by memory, not FLOPs: the bytes it moves say whether the flag is a cliff or the bandwidth.
      if (!reason.empty() && n.bytes > 0)
        reason += fmt::format("; it moves {:.1f} MB (inputs, weights, outputs) at {:.1f} GB/s: memory-bound if that is "
                              "near this machine's memory bandwidth", n.bytes / 1e6, n.bytes / (n.mean_ms * 1e6));
    }
    if (!reason.empty()) flags.push_back({n.node, n.kernel, reason, n.share});
  }
  std::stable_sort(flags.begin(), flags.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  return flags;
}

std::string format_profile(const ProfileReport& r, size_t top) {
  std::string s = fmt::format("ferry profile: {} ({} backend, precision {}, mean of {} run(s))\n", r.model, r.backend,
                              r.precision, r.runs);
  s += fmt::format("total {:.3f} ms per run (sum of nodes)\n", r.total_ms);
  s += fmt::format("memory: arena {:.2f} MiB (the planned intermediates), weights {:.2f} MiB, process peak {:.1f} MiB\n"
                   "transfers: {}\n\n",
                   r.arena_bytes / 1048576.0, r.weight_bytes / 1048576.0, r.peak_rss_bytes / 1048576.0, r.transfers);
  s += "by op type:\n";
  for (const auto& t : r.by_type)
    s += fmt::format("  {:<28} {:>4} node(s) {:>10.3f} ms {:>6.1f}%{}\n", t.op, t.nodes, t.ms, 100 * t.share,
                     t.flops > 0 && t.ms > 0 ? fmt::format("  {:.2f} GFLOP/s", t.flops / (t.ms * 1e6)) : "");
  std::vector<const NodeProfile*> order;
  for (const auto& n : r.nodes) order.push_back(&n);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->mean_ms > b->mean_ms; });
  if (!r.flags.empty()) {
    s += fmt::format("\nflagged: {} node(s) where a performance cliff may be (kernel below {:.0f}% of the fp32 peak "
                     "while over {:.0f}% of the time, or a oneDNN reference implementation):\n",
                     r.flags.size(), 100 * kSlowFractionOfPeak, 100 * kSlowShare);
    for (const ProfileFlag& f : r.flags)
      s += fmt::format("  {:>5.1f}%  {}  {}: {}\n", 100 * f.share, f.node, f.kernel, f.reason);
  }
  s += fmt::format("\ntop {} node(s):\n", std::min(top, order.size()));
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    const NodeProfile& n = *order[i];
    std::string covers;
    if (n.covers.size() > 1 || (n.covers.size() == 1 && n.covers[0] != n.node))
      for (const auto& c : n.covers) covers += (covers.empty() ? " covers " : ", ") + c;
    s += fmt::format("  {:>9.3f} ms {:>5.1f}%  {}{}  [{}] {}{}{}\n", n.mean_ms, 100 * n.share,
                     n.placement == "host" ? "(host) " : "", n.node, n.op, n.kernel,
                     n.flops > 0 && n.mean_ms > 0 ? fmt::format("  {:.2f} GFLOP/s", n.flops / (n.mean_ms * 1e6)) : "",
                     covers);
  }
  return s;
}

namespace {
nlohmann::json partition_json(const ProfileReport& r) {
  using nlohmann::json;
  if (!r.partition) return nullptr;
  const TransferProfile& t = *r.partition;
  auto bytes = [](int64_t b) { return b >= 0 ? json(b) : json(nullptr); };
  return {{"target", t.target}, {"emulated", t.emulated}, {"device_nodes", t.device_nodes}, {"host_nodes", t.host_nodes},
          {"device_ms", t.device_ms}, {"host_ms", t.host_ms}, {"input_bytes", bytes(t.input_bytes)},
          {"output_bytes", bytes(t.output_bytes)}, {"border_values", t.borders}, {"border_bytes", bytes(t.border_bytes)},
          {"estimated_transfer_us", t.estimated_us >= 0 ? json(t.estimated_us) : json(nullptr)},
          {"link_gb_per_s", t.link_gb_per_s}};
}
}  // namespace

nlohmann::json profile_to_json(const ProfileReport& r) {
  using nlohmann::json;
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json nodes = json::array(), types = json::array();
  for (const auto& n : r.nodes)
    nodes.push_back({{"node", n.node}, {"op", n.op}, {"kernel", n.kernel}, {"covers", n.covers}, {"ms", num(n.mean_ms)},
                     {"share", num(n.share)}, {"flops", n.flops >= 0 ? json(n.flops) : json(nullptr)},
                     {"gflops_per_s", n.flops > 0 && n.mean_ms > 0 ? num(n.flops / (n.mean_ms * 1e6)) : json(nullptr)},
                     {"bytes", n.bytes}, {"placement", n.placement.empty() ? json(nullptr) : json(n.placement)}});
  for (const auto& t : r.by_type)
    types.push_back({{"op", t.op}, {"nodes", t.nodes}, {"ms", num(t.ms)}, {"share", num(t.share)}, {"flops", t.flops}});
  json flags = json::array();
  for (const auto& f : r.flags)
    flags.push_back({{"node", f.node}, {"kernel", f.kernel}, {"share", num(f.share)}, {"reason", f.reason}});
  return {{"schema", "ferry.profile/1"}, {"model", r.model}, {"backend", r.backend}, {"precision", r.precision},
          {"runs", r.runs}, {"total_ms", num(r.total_ms)}, {"arena_bytes", r.arena_bytes},
          {"weight_bytes", r.weight_bytes}, {"peak_rss_bytes", r.peak_rss_bytes}, {"transfers", r.transfers}, {"nodes", nodes}, {"by_type", types},
          {"partition", partition_json(r)},
          {"peak_gflops", r.peak_gflops > 0 ? json(r.peak_gflops) : json(nullptr)}, {"flags", flags},
          {"method", "per-node hook (memory arena off), mean of " + std::to_string(r.runs) + " runs"}};
}

nlohmann::json profile_to_trace(const ProfileReport& r) {
  using nlohmann::json;
  json ev = json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "ferry " + r.model}}}});
  ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", r.backend + " backend"}}}});
  for (const auto& e : r.trace)
    ev.push_back({{"name", e.name}, {"cat", e.op}, {"ph", "X"}, {"ts", e.ts_us}, {"dur", e.dur_us}, {"pid", 1}, {"tid", 1},
                  {"args", {{"op", e.op}, {"run", e.run}}}});
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}, {"otherData", {{"model", r.model}, {"precision", r.precision}}}};
}

std::string profile_to_csv(const ProfileReport& r) {
  auto q = [](const std::string& s) {
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  std::string s = "node,op,kernel,covers,mean_ms,share,flops,gflops_per_s,bytes\n";
  for (const auto& n : r.nodes) {
    std::string covers;
    for (const auto& c : n.covers) covers += (covers.empty() ? "" : " ") + c;
    s += fmt::format("{},{},{},{},{:.6f},{:.6f},{},{},{:.0f}\n", q(n.node), q(n.op), q(n.kernel), q(covers), n.mean_ms, n.share,
                     n.flops >= 0 ? fmt::format("{:.0f}", n.flops) : "",
                     n.flops > 0 && n.mean_ms > 0 ? fmt::format("{:.3f}", n.flops / (n.mean_ms * 1e6)) : "", n.bytes);
  }
  return s;
}

}  // namespace ferry::tools
