#include "tools/tune_precision.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "passes/precision.h"
#include "tools/compare/compare.h"
#include "runtime/model_session.h"

namespace ferry::tools {

std::string MetricGoal::text() const { return fmt::format("{}{}{}", metric, at_least ? ">=" : "<=", value); }

double MetricGoal::value_of(const compare::Metrics& m) const {
  if (metric == "cosine") return m.cosine;
  if (metric == "rel_euclid") return m.rel_euclid;
  if (metric == "max_abs") return m.max_abs;
  if (metric == "max_rel") return m.max_rel;
  if (metric == "rmse") return m.rmse;
  if (metric == "snr_db") return m.snr_db;
  if (metric == "top1") return m.top1.value_or(1.0);
  return NAN;
}

bool MetricGoal::met(const compare::Metrics& m) const {
  if (m.candidate_nan > m.golden_nan || m.candidate_inf > m.golden_inf) return false;
  const double v = value_of(m);
  if (std::isnan(v)) return false;
  return at_least ? v >= value : v <= value;
}

Result<MetricGoal> parse_metric_goal(const std::string& s) {
  static const std::map<std::string, bool> kMetrics = {{"cosine", true}, {"rel_euclid", false}, {"max_abs", false},
                                                       {"max_rel", false}, {"rmse", false},      {"snr_db", true},
                                                       {"top1", true}};
  MetricGoal g;
  size_t op = s.find(">=");
  g.at_least = true;
  if (op == std::string::npos) {
    op = s.find("<=");
    g.at_least = false;
  }
  if (op == std::string::npos)
    return Status::invalid("--metric '" + s + "' must look like cosine>=0.999 or rel_euclid<=0.01");
  g.metric = s.substr(0, op);
  auto it = kMetrics.find(g.metric);
  if (it == kMetrics.end())
    return Status::invalid("--metric '" + s + "': unknown metric '" + g.metric +
                           "' (cosine, rel_euclid, max_abs, max_rel, rmse, snr_db, top1)");
  if (it->second != g.at_least)
    return Status::invalid("--metric '" + s + "': " + g.metric + (it->second ? " must be at least (>=)" : " must be at most (<=)") +
                           " a value");
  try {
    size_t used = 0;
    g.value = std::stod(s.substr(op + 2), &used);
    if (used != s.size() - op - 2) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    return Status::invalid("--metric '" + s + "': '" + s.substr(op + 2) + "' is not a number");
  }
  return g;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  std::unique_ptr<runtime::ModelSession> runner;
  std::vector<std::pair<std::string, RtValue>> outputs;
};

// Loads the model with `keep` in fp32 and runs it once, capturing ONNX-named intermediates when asked.
Result<Candidate> run_with(const TuneOptions& o, const std::vector<std::string>& keep,
                           const std::map<std::string, RtValue>& feeds, compare::TensorMap* intermediates) {
  runtime::SessionOptions so = o.session;
  so.precision.keep_fp32 = keep;
  Candidate c;
  FERRY_ASSIGN_OR_RETURN(c.runner, runtime::ModelSession::open(o.model, so));
  if (intermediates) {
    c.runner->set_node_hook([intermediates](const ir::Node& n, const std::vector<const RtValue*>&,
                                            const std::vector<RtValue>& outs) {
      for (size_t k = 0; k < outs.size() && k < n.outputs.size(); ++k)
        if (n.outputs[k] && !n.outputs[k]->onnx_name.empty() && outs[k].is_tensor())
          (*intermediates)[n.outputs[k]->onnx_name] = outs[k].tensor.clone();
    });
  }
  FERRY_ASSIGN_OR_RETURN(c.outputs, c.runner->run(feeds));
  if (intermediates) c.runner->set_node_hook(nullptr);
  return c;
}

double median_ms(runtime::ModelSession& r, const std::map<std::string, RtValue>& feeds, int runs) {
  std::vector<double> ms;
  if (!r.run(feeds).ok()) return NAN;  // warmup: the first run refines the memory plan and faults pages in
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    if (!r.run(feeds).ok()) return NAN;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? NAN : ms[ms.size() / 2];
}

// Error of a tensor against the golden as one number that grows with the error: 1 - cosine (NaN/Inf: 2).
double error_of(const compare::TensorMap& golden, const compare::TensorMap& cand, const std::string& name) {
  auto g = golden.find(name);
  auto c = cand.find(name);
  if (g == golden.end() || c == cand.end()) return 0;
  auto m = compare::compute_metrics(g->second, c->second, compare::Thresholds());
  if (!m.ok()) return 0;
  if (m->candidate_nan > m->golden_nan || m->candidate_inf > m->golden_inf || std::isnan(m->cosine)) return 2;
  return 1 - m->cosine;
}

}  // namespace

Result<TuneReport> tune_precision(const TuneOptions& options) {
  // Shapes given for inputs are fixed at load (as run, compare and profile do): shape subgraphs fold and
  // the fusions that need static shapes apply, so the search and its timings are of the graph that runs.
  TuneOptions o = options;
  for (const auto& [name, dims] : o.inputs.shapes) o.session.input_shapes.emplace(name, dims);
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  const passes::PrecisionMode mode = o.session.precision.mode;
  if (mode != passes::PrecisionMode::kFp16 && mode != passes::PrecisionMode::kBf16)
    return Status::invalid("tune-precision searches fp16 or bf16 (--precision fp16|bf16), not " + passes::to_string(mode));
  TuneReport rep;
  rep.model = o.model;
  rep.precision = runtime::describe_precision(mode, o.session.backend, o.session.backend_options);
  rep.goal = o.goal.text();
  rep.max_evaluations = o.max_evaluations;

  // Inputs and the golden (reference backend, fp32, every ONNX-named intermediate).
  frontend::ImportOptions import;
  import.allow_newer_opset = o.session.allow_newer_opset;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> stored, runtime::open_model(o.model, import));
  FERRY_ASSIGN_OR_RETURN(std::vector<PreparedInput> prepared, prepare_inputs(*stored->graph, o.inputs));
  std::map<std::string, RtValue> feeds;
  for (const PreparedInput& in : prepared) feeds.emplace(in.name, RtValue(in.tensor));
  say("running the golden (reference backend, fp32) ...");
  FERRY_ASSIGN_OR_RETURN(compare::TensorMap golden,
                         compare::run_reference_golden(o.model, feeds, o.session.input_shapes, true, o.session.backend_options.threads,
                                                       o.session.allow_newer_opset));

  auto judge = [&](const std::vector<std::pair<std::string, RtValue>>& outs, TuneEvaluation& e) {
    e.pass = true;
    e.worst = o.goal.at_least ? INFINITY : -INFINITY;
    for (const compare::Row& row : compare::compare_outputs(outs, golden, compare::Thresholds())) {
      if (!row.metrics) {
        e.pass = false;
        continue;
      }
      const bool broken = row.metrics->candidate_nan > row.metrics->golden_nan ||
                          row.metrics->candidate_inf > row.metrics->golden_inf;
      const double v = broken ? NAN : o.goal.value_of(*row.metrics);
      if (std::isnan(v) || std::isnan(e.worst)) e.worst = NAN;  // NaN/Inf in an output: the worst there is
      else e.worst = o.goal.at_least ? std::min(e.worst, v) : std::max(e.worst, v);
      e.pass = e.pass && o.goal.met(*row.metrics);
    }
  };
  auto evaluate = [&](const std::vector<std::string>& keep) -> Result<TuneEvaluation> {
    if (static_cast<int>(rep.evaluations.size()) >= o.max_evaluations)
      return Status::error(ErrorCode::kOutOfRange, "tune-precision: more than --max-evaluations " +
                                                       std::to_string(o.max_evaluations) + " evaluations");
    FERRY_ASSIGN_OR_RETURN(Candidate c, run_with(o, keep, feeds, nullptr));
    TuneEvaluation e;
    e.keep = keep;
    judge(c.outputs, e);
    rep.evaluations.push_back(e);
    say(fmt::format("evaluation {}: {} node(s) in fp32, worst {} {:.6g} -> {}", rep.evaluations.size(), keep.size(),
                    o.goal.metric, e.worst, e.pass ? "meets the goal" : "misses"));
    return e;
  };

  // 1. Everything low, with its intermediates for the ranking.
  say("running the candidate with every node in " + passes::to_string(mode) + " ...");
  compare::TensorMap cand;
  FERRY_ASSIGN_OR_RETURN(Candidate all, run_with(o, {}, feeds, &cand));
  rep.all_low.keep = {};
  judge(all.outputs, rep.all_low);
  rep.evaluations.push_back(rep.all_low);

  // The optimized graph's low-precision nodes, in order; the value each writes (its ONNX name).
  const ir::Graph& g = all.runner->session(0).graph();
  struct NodeInfo {
    std::string name, out;
    std::vector<std::string> ins;
  };
  std::vector<NodeInfo> nodes;
  std::map<const ir::Value*, std::string> onnx_of;  // through RoundFloat: the ONNX tensor a value stands for
  for (const auto& n : g.nodes) {
    if (n->op_type == "RoundFloat") {
      // An output rounding: its input (the node's internal value) stands for the ONNX tensor it writes.
      if (n->outputs[0] && !n->outputs[0]->onnx_name.empty()) onnx_of[n->inputs[0]] = n->outputs[0]->onnx_name;
      continue;
    }
  }
  for (const auto& n : g.nodes) {
    if (n->op_type == "RoundFloat" || n->outputs.empty() || !n->outputs[0]) continue;
    NodeInfo info;
    info.name = n->name;
    const ir::Value* y = n->outputs[0];
    info.out = !y->onnx_name.empty() ? y->onnx_name : (onnx_of.count(y) ? onnx_of[y] : "");
    for (const ir::Value* v : n->inputs) {
      if (!v) continue;
      const ir::Value* src = v;
      if (v->producer && v->producer->op_type == "RoundFloat") src = v->producer->inputs[0];
      if (!src->onnx_name.empty()) info.ins.push_back(src->onnx_name);
      else if (onnx_of.count(src)) info.ins.push_back(onnx_of[src]);
    }
    if (y->dtype == DType::kFloat32) nodes.push_back(std::move(info));
  }
  rep.candidates = static_cast<int>(nodes.size());
  rep.tuned_ms = rep.all_low_ms = median_ms(*all.runner, feeds, o.timing_runs);
  if (rep.all_low.pass) {
    rep.pass = true;
    rep.final_metrics.clear();
    for (const compare::Row& row : compare::compare_outputs(all.outputs, golden, compare::Thresholds()))
      if (row.metrics) rep.final_metrics.emplace_back(row.tensor, *row.metrics);
  } else {
    // 2. Seeds: nodes that write or read a tensor beyond the low type's range.
    const double limit = mode == passes::PrecisionMode::kFp16 ? 65504.0 : 3.3895313892515355e38;
    std::set<std::string> out_of_range;
    for (const auto& [name, t] : golden)
      if (auto rr = compare::range_of(name, t); rr && rr->absmax > limit) out_of_range.insert(name);
    std::vector<std::string> order;
    std::set<std::string> seeded;
    for (const NodeInfo& n : nodes) {
      bool hit = out_of_range.count(n.out) != 0;
      for (const std::string& i : n.ins) hit = hit || out_of_range.count(i);
      if (hit && seeded.insert(n.name).second) rep.seeds.push_back(n.name);
    }
    // 3. The rest by own error: output error minus the worst input error, largest first.
    std::vector<std::pair<double, std::string>> own;
    for (const NodeInfo& n : nodes) {
      if (seeded.count(n.name)) continue;
      double in_err = 0;
      for (const std::string& i : n.ins) in_err = std::max(in_err, error_of(golden, cand, i));
      own.emplace_back(error_of(golden, cand, n.out) - in_err, n.name);
    }
    std::stable_sort(own.begin(), own.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [err, name] : own) {
      if (rep.ranked.size() < 20) rep.ranked.push_back(name);
      order.push_back(name);
    }
    auto prefix = [&](size_t k) {
      std::vector<std::string> keep = rep.seeds;
      keep.insert(keep.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(k, order.size())));
      return keep;
    };
    // 4. Bisection for the shortest passing prefix (the whole list must pass, or nothing does).
    FERRY_ASSIGN_OR_RETURN(TuneEvaluation seeds_only, evaluate(prefix(0)));
    size_t best = 0;
    bool found = seeds_only.pass;
    if (!found) {
      FERRY_ASSIGN_OR_RETURN(TuneEvaluation every, evaluate(prefix(order.size())));
      if (every.pass) {
        size_t lo = 0, hi = order.size();  // prefix(lo) fails, prefix(hi) passes
        while (hi - lo > 1) {
          const size_t mid = (lo + hi) / 2;
          FERRY_ASSIGN_OR_RETURN(TuneEvaluation e, evaluate(prefix(mid)));
          (e.pass ? hi : lo) = mid;
        }
        best = hi;
        found = true;
      }
    }
    if (found) {
      // Pruning: drop each chosen node (latest first) the goal does not need.
      std::vector<std::string> keep = prefix(best);
      for (size_t i = keep.size(); i-- > 0 && keep.size() > 1;) {
        if (static_cast<int>(rep.evaluations.size()) >= o.max_evaluations) {
          rep.untried = static_cast<int>(i) + 1;  // nodes 0..i were not tried
          break;
        }
        std::vector<std::string> trial = keep;
        trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(i));
        FERRY_ASSIGN_OR_RETURN(TuneEvaluation e, evaluate(trial));
        if (e.pass) keep = trial;
      }
      rep.keep = keep;
      rep.pass = true;
    } else {
      rep.keep = prefix(order.size());  // even every node in fp32 misses: say so, keep the best try
    }
    FERRY_ASSIGN_OR_RETURN(Candidate fin, run_with(o, rep.keep, feeds, nullptr));
    for (const compare::Row& row : compare::compare_outputs(fin.outputs, golden, compare::Thresholds()))
      if (row.metrics) rep.final_metrics.emplace_back(row.tensor, *row.metrics);
    rep.tuned_ms = median_ms(*fin.runner, feeds, o.timing_runs);
  }
  // Speed: fp32 on the same backend.
  runtime::SessionOptions f32 = o.session;
  f32.precision = passes::PrecisionOptions();
  FERRY_ASSIGN_OR_RETURN(auto base, runtime::ModelSession::open(o.model, f32));
  rep.fp32_ms = median_ms(*base, feeds, o.timing_runs);
  return rep;
}

namespace {

// Said wherever the keep list is shown when the evaluation budget, not the search, ended it.
std::string budget_note(const TuneReport& r) {
  if (r.untried <= 0) return "";
  return fmt::format("not minimal: the --max-evaluations budget ({}) ran out with {} kept node(s) not yet tried "
                     "for removal; --max-evaluations {} lets the search go further",
                     r.max_evaluations, r.untried, r.evaluations.size() + static_cast<size_t>(r.untried));
}

}  // namespace

std::string keep_list_text(const TuneReport& r) {
  std::string s = fmt::format("# ferry tune-precision {} ({}), goal {}\n", r.model, r.precision, r.goal);
  s += fmt::format("# {} node(s) kept in fp32 of {}, found in {} evaluation(s); {}\n", r.keep.size(), r.candidates,
                   r.evaluations.size(), r.pass ? "every output meets the goal" : "THE GOAL IS NOT MET");
  if (!budget_note(r).empty()) s += "# " + budget_note(r) + "\n";
  for (const std::string& k : r.keep) s += k + "\n";
  return s;
}

std::string format_tune_report(const TuneReport& r) {
  std::string s = fmt::format("tune-precision: {}\n  precision {}, goal {} on every output\n", r.model, r.precision, r.goal);
  s += fmt::format("  all {} node(s) low: worst {} {:.6g} ({})\n", r.candidates, r.goal.substr(0, r.goal.find_first_of("<>")),
                   r.all_low.worst, r.all_low.pass ? "meets the goal" : "misses");
  if (!r.seeds.empty()) {
    s += "  out-of-range seeds:";
    for (const std::string& n : r.seeds) s += " " + n;
    s += "\n";
  }
  // One name a line: a few hundred of them on one line cannot be read or copied.
  s += fmt::format("  kept in fp32 ({}):{}\n", r.keep.size(), r.keep.empty() ? " (none)" : "");
  for (const std::string& n : r.keep) s += "    " + n + "\n";
  s += fmt::format("  evaluations: {}\n", r.evaluations.size());
  if (!budget_note(r).empty()) s += "  " + budget_note(r) + "\n";
  for (const auto& [name, m] : r.final_metrics)
    s += fmt::format("  output {}: {}\n", name, compare::metrics_summary(m));
  s += fmt::format("  median latency: fp32 {:.3f} ms, all low {:.3f} ms, tuned {:.3f} ms ({:.2f}x fp32)\n", r.fp32_ms,
                   r.all_low_ms, r.tuned_ms, r.fp32_ms > 0 ? r.tuned_ms / r.fp32_ms : 0.0);
  if (!r.pass) s += "result: FAIL (even with every node in fp32 the goal is missed)\n";
  else s += r.untried > 0 ? "result: PASS (the keep list is not minimal)\n" : "result: PASS\n";
  return s;
}

nlohmann::json tune_report_to_json(const TuneReport& r) {
  nlohmann::json j;
  j["schema"] = "ferry.tune-precision/1";
  j["model"] = r.model;
  j["precision"] = r.precision;
  j["goal"] = r.goal;
  j["pass"] = r.pass;
  j["candidates"] = r.candidates;
  j["seeds"] = r.seeds;
  j["ranked"] = r.ranked;
  j["keep"] = r.keep;
  j["minimal"] = r.pass && r.untried == 0;
  j["untried"] = r.untried;
  j["all_low"] = {{"worst", r.all_low.worst}, {"pass", r.all_low.pass}};
  nlohmann::json ev = nlohmann::json::array();
  for (const TuneEvaluation& e : r.evaluations) ev.push_back({{"keep", e.keep}, {"worst", e.worst}, {"pass", e.pass}});
  j["evaluations"] = ev;
  nlohmann::json outs = nlohmann::json::array();
  for (const auto& [name, m] : r.final_metrics)
    outs.push_back({{"output", name}, {"cosine", m.cosine}, {"rel_euclid", m.rel_euclid}, {"max_abs", m.max_abs}});
  j["final_metrics"] = outs;
  j["latency_ms"] = {{"fp32", r.fp32_ms}, {"all_low", r.all_low_ms}, {"tuned", r.tuned_ms}};
  return j;
}

}  // namespace ferry::tools
