#include "tools/inspect_plan.h"

#include "runtime/model_session.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "runtime/executor.h"
#include "tools/run_inputs.h"

namespace ferry::tools {

namespace {

void count_weights(const ir::Graph& g, ModelPlan& p) {
  for (const ir::Value* v : g.initializers()) {
    p.weights++;
    p.weight_bytes += static_cast<int64_t>(v->initializer.nbytes());
  }
  for (const auto& n : g.nodes)
    for (const ir::Graph* sg : n->subgraphs()) count_weights(*sg, p);
}

std::string bytes_text(double b) {
  if (b >= (1 << 30)) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (b >= (1 << 20)) return fmt::format("{:.2f} MiB", b / (1 << 20));
  if (b >= (1 << 10)) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string o;
  for (const auto& s : v) o += (o.empty() ? "" : sep) + s;
  return o;
}

}  // namespace

ModelPlan describe_plan(const runtime::Session& session) {
  ModelPlan p;
  p.path = session.model().source_path;
  p.backend = session.options().backend;
  p.opt_level = session.options().opt_level;
  p.passes = session.pass_reports();
  const ir::Graph& g = session.graph();
  const runtime::Executor& ex = session.executor();
  const runtime::GraphPlan* gp = ex.main_plan();
  std::set<const ir::Value*> planned, outputs(g.outputs.begin(), g.outputs.end());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = *g.nodes[i];
    PlanNode pn;
    pn.index = static_cast<int>(i);
    pn.name = n.name;
    pn.op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    pn.kernel = gp && i < gp->kernels.size() ? gp->kernels[i]->name() : "?";
    pn.covers = n.provenance;
    for (const ir::Value* o : n.outputs)
      if (o) pn.outputs.push_back(o->name + ": " + o->type_string());
    pn.subgraphs = static_cast<int>(n.subgraphs().size());
    p.kernel_counts[pn.kernel]++;
    p.nodes.push_back(std::move(pn));
  }
  if (gp && gp->memory) {
    const runtime::GraphMemory& m = *gp->memory;
    for (size_t r = 0; r < m.requests.size(); ++r) {
      PlanBuffer b;
      b.value = m.requests[r].name;
      b.bytes = m.requests[r].bytes;
      b.offset = m.plan.offsets[r];
      b.first_use = m.requests[r].first_use;
      b.last_use = m.requests[r].last_use;
      if (int k = m.plan.inplace_of[r]; k >= 0) b.inplace_of = m.requests[k].name;
      p.buffers.push_back(std::move(b));
      planned.insert(m.values[r]);
    }
    p.arena_bytes = m.plan.arena_bytes;
    p.naive_bytes = m.plan.naive_bytes;
    // Peak of live planned bytes: at each node, the buffers live there (an in-place pair counts once).
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      size_t live = 0;
      for (size_t r = 0; r < m.requests.size(); ++r) {
        const auto& q = m.requests[r];
        if (q.first_use > static_cast<int>(i) || q.last_use < static_cast<int>(i)) continue;
        int k = m.plan.inplace_of[r];
        if (k >= 0 && m.requests[k].last_use == static_cast<int>(i)) continue;  // shares k's bytes here
        live += (q.bytes + 63) / 64 * 64;
      }
      p.peak_live_bytes = std::max(p.peak_live_bytes, live);
    }
  }
  p.arena_allocated = ex.arena_bytes() > 0;
  p.refined = ex.plan_refined();
  p.dropped_values = ex.dropped_values();
  for (const auto& n : g.nodes)
    for (const ir::Value* o : n->outputs)
      if (o && !outputs.count(o) && !planned.count(o)) p.unplanned_values++;
  p.unplanned_values -= p.dropped_values;  // counted apart
  count_weights(g, p);
  return p;
}

Result<ModelPlan> plan_model(const std::string& path, const runtime::SessionOptions& options) {
  // .onnx or .ferry (its graph as compiled; a geared file shows its first gear).
  FERRY_ASSIGN_OR_RETURN(auto opened, runtime::ModelSession::open(path, options));
  runtime::Session* session = &opened->session(0);
  std::string why;
  InputOptions io;
  for (const auto& [name, dims] : options.input_shapes) io.shapes[name] = dims;
  auto inputs = prepare_inputs(session->graph(), io);
  if (!inputs.ok()) {
    why = inputs.status().to_string();
  } else {
    std::map<std::string, RtValue> feeds;
    for (const auto& in : *inputs) feeds.emplace(in.name, RtValue(in.tensor));
    auto r = session->run(feeds);
    if (!r.ok()) why = "the run on random inputs failed: " + r.status().to_string();
  }
  ModelPlan p = describe_plan(*session);
  p.not_refined_because = why;
  return p;
}

std::string format_model_plan(const ModelPlan& p) {
  std::string o = fmt::format("plan: {} (backend {}, opt level {})\n", p.path, p.backend, p.opt_level);
  if (!p.passes.empty()) {
    o += "passes:";
    for (const auto& r : p.passes) o += fmt::format(" {} ({})", r.pass, r.changes);
    o += "\n";
  }
  size_t nw = 4, ow = 2, kw = 6;
  for (const auto& n : p.nodes) {
    nw = std::max(nw, std::min<size_t>(n.name.size(), 40));
    ow = std::max(ow, n.op.size());
    kw = std::max(kw, n.kernel.size());
  }
  o += fmt::format("nodes ({}):\n  {:>4}  {:<{}}  {:<{}}  {:<{}}  {}\n", p.nodes.size(), "#", "node", nw, "op", ow,
                   "kernel", kw, "covers -> outputs");
  for (const auto& n : p.nodes) {
    std::string covers = n.covers.size() == 1 && n.covers[0] == n.name ? "" : "[" + join(n.covers, ", ") + "] ";
    o += fmt::format("  {:>4}  {:<{}}  {:<{}}  {:<{}}  {}-> {}", n.index, n.name, nw, n.op, ow, n.kernel, kw, covers,
                     join(n.outputs, ", "));
    if (n.subgraphs) o += fmt::format(" (+{} subgraph{})", n.subgraphs, n.subgraphs == 1 ? "" : "s");
    o += "\n";
  }
  o += "kernels:";
  std::vector<std::pair<std::string, int64_t>> kc(p.kernel_counts.begin(), p.kernel_counts.end());
  std::stable_sort(kc.begin(), kc.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [k, c] : kc) o += fmt::format(" {} x{}", k, c);
  o += fmt::format("\nmemory plan ({} value{} in the arena; offsets are 64-byte aligned):\n", p.buffers.size(),
                   p.buffers.size() == 1 ? "" : "s");
  if (!p.buffers.empty()) {
    size_t vw = 5;
    for (const auto& b : p.buffers) vw = std::max(vw, std::min<size_t>(b.value.size(), 40));
    o += fmt::format("  {:<{}}  {:>12}  {:>12}  {:>9}\n", "value", vw, "bytes", "offset", "nodes");
    for (const auto& b : p.buffers) {
      o += fmt::format("  {:<{}}  {:>12}  {:>12}  {:>9}", b.value, vw, b.bytes, b.offset,
                       fmt::format("{}..{}", b.first_use, b.last_use));
      if (!b.inplace_of.empty()) o += "  in place of " + b.inplace_of;
      o += "\n";
    }
  }
  double saved = p.naive_bytes ? 100.0 * (1.0 - static_cast<double>(p.arena_bytes) / p.naive_bytes) : 0.0;
  o += fmt::format("arena: {} ({} bytes){}; one buffer per value would take {} ({:.1f}% saved); peak live {}\n",
                   bytes_text(static_cast<double>(p.arena_bytes)), p.arena_bytes,
                   p.arena_bytes && !p.arena_allocated ? " (not allocated: past the per-tensor size limit)" : "",
                   bytes_text(static_cast<double>(p.naive_bytes)), saved,
                   bytes_text(static_cast<double>(p.peak_live_bytes)));
  if (p.refined && p.dropped_values)
    o += fmt::format("refined by one run on random inputs: {} value{} whose kernels allocate their own memory "
                     "left the arena\n",
                     p.dropped_values, p.dropped_values == 1 ? "" : "s");
  else if (!p.refined)
    o += "not refined by a run (" + (p.not_refined_because.empty() ? std::string("no run") : p.not_refined_because) +
         "): some planned values may belong to kernels that allocate their own memory\n";
  if (p.unplanned_values)
    o += fmt::format("not in the arena: {} intermediate{} (dynamic shapes, views of other buffers, subgraph "
                     "results; pass --shape NAME=DIMS to fix dynamic inputs)\n",
                     p.unplanned_values, p.unplanned_values == 1 ? "" : "s");
  o += fmt::format("weights: {} ({} bytes in {} initializer{})\n", bytes_text(static_cast<double>(p.weight_bytes)),
                   p.weight_bytes, p.weights, p.weights == 1 ? "" : "s");
  return o;
}

nlohmann::json model_plan_to_json(const ModelPlan& p) {
  using nlohmann::json;
  json passes = json::array();
  for (const auto& r : p.passes) passes.push_back({{"pass", r.pass}, {"changes", r.changes}});
  json nodes = json::array();
  for (const auto& n : p.nodes)
    nodes.push_back({{"index", n.index},
                     {"name", n.name},
                     {"op", n.op},
                     {"kernel", n.kernel},
                     {"covers", n.covers},
                     {"outputs", n.outputs},
                     {"subgraphs", n.subgraphs}});
  json buffers = json::array();
  for (const auto& b : p.buffers)
    buffers.push_back({{"value", b.value},
                       {"bytes", b.bytes},
                       {"offset", b.offset},
                       {"first_use", b.first_use},
                       {"last_use", b.last_use},
                       {"inplace_of", b.inplace_of.empty() ? json(nullptr) : json(b.inplace_of)}});
  return {{"path", p.path},
          {"backend", p.backend},
          {"opt_level", p.opt_level},
          {"passes", passes},
          {"nodes", nodes},
          {"kernels", p.kernel_counts},
          {"memory", {{"buffers", buffers},
                      {"arena_bytes", p.arena_bytes},
                      {"arena_allocated", p.arena_allocated},
                      {"naive_bytes", p.naive_bytes},
                      {"peak_live_bytes", p.peak_live_bytes},
                      {"unplanned_values", p.unplanned_values},
                      {"refined_by_run", p.refined},
                      {"dropped_values", p.dropped_values}}},
          {"weight_bytes", p.weight_bytes},
          {"weights", p.weights}};
}

}  // namespace ferry::tools
