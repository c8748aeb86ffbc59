// The evaluate report: JSON ("ferry.evaluate/1"), the terminal summary, and --merge of partial reports.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "tools/evaluate/evaluate.h"

namespace ferry::tools::evaluate {

namespace fs = std::filesystem;

double Timing::rate(int64_t samples) const {
  const double run = wall_s - open_s;
  return run > 0 ? static_cast<double>(samples) / run : 0;
}

std::string EvaluateReport::replay_command(const SampleResult& s) const {
  if (s.replay.empty()) return "";
  return "ferry compare " + model + " --inputs " + s.replay + (target_flags.empty() ? "" : " " + target_flags) +
         " --layerwise";
}

nlohmann::json report_to_json(const EvaluateReport& r) {
  nlohmann::json agg = r.aggregate.to_json();
  const auto& worst = r.aggregate.worst();  // to_json lists them in this order
  for (size_t i = 0; i < worst.size(); ++i)
    if (!worst[i].replay.empty()) agg["worst"][i]["replay_command"] = r.replay_command(worst[i]);
  const double rate = r.timing.rate(r.aggregate.samples());
  nlohmann::json j = {{"schema", "ferry.evaluate/1"},
                      {"model", r.model},
                      {"data", r.data},
                      {"labels", r.labels},
                      {"preprocess", r.preprocess},
                      {"golden", r.golden},
                      {"target", r.target},
                      {"target_flags", r.target_flags},
                      {"batch", r.batch},
                      {"workers", r.workers},
                      {"shard", {{"index", r.shard_index}, {"count", r.shard_count}}},
                      {"dataset_samples", r.dataset_samples},
                      {"timing",
                       {{"wall_s", r.timing.wall_s},
                        {"data_wait_s", r.timing.data_wait_s},
                        {"data_work_s", r.timing.data_work_s},
                        {"golden_s", r.timing.golden_s},
                        {"target_s", r.timing.target_s},
                        {"open_s", r.timing.open_s},
                        {"samples_per_s", rate}}},
                      {"samples_file", r.samples_file},
                      {"result", agg}};
  if (!r.classes.empty()) j["classes"] = r.classes;
  if (!r.parts.empty()) j["parts"] = r.parts;
  if (!r.notes.empty()) j["notes"] = r.notes;
  return j;
}

Result<EvaluateReport> report_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("schema", "") != "ferry.evaluate/1")
    return Status::invalid(where + ": not a ferry evaluate report (schema ferry.evaluate/1)");
  try {
    EvaluateReport r;
    r.model = j.at("model").get<std::string>();
    r.data = j.at("data").get<std::string>();
    r.labels = j.value("labels", "");
    r.preprocess = j.value("preprocess", "");
    r.golden = j.at("golden").get<std::string>();
    r.target = j.at("target").get<std::string>();
    r.target_flags = j.value("target_flags", "");
    r.batch = j.at("batch").get<int>();
    r.workers = j.value("workers", 0);
    r.shard_index = j.at("shard").at("index").get<int>();
    r.shard_count = j.at("shard").at("count").get<int>();
    r.dataset_samples = j.at("dataset_samples").get<int64_t>();
    r.classes = j.value("classes", std::vector<std::string>{});
    auto& t = j.at("timing");
    r.timing = {t.at("wall_s").get<double>(),   t.at("data_wait_s").get<double>(), t.at("data_work_s").get<double>(),
                t.at("golden_s").get<double>(), t.at("target_s").get<double>(),    t.value("open_s", 0.0)};
    r.samples_file = j.value("samples_file", "");
    r.parts = j.value("parts", std::vector<std::string>{});
    r.notes = j.value("notes", std::vector<std::string>{});
    FERRY_ASSIGN_OR_RETURN(r.aggregate, Aggregate::from_json(j.at("result"), where));
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(where + ": not a ferry evaluate report (" + e.what() + ")");
  }
}

namespace {

Result<EvaluateReport> read_report(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::io("--merge: cannot read " + path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded()) return Status::invalid(path + ": not JSON");
  return report_from_json(j, path);
}

Status same_run(const EvaluateReport& a, const EvaluateReport& b, const std::string& where) {
  auto differ = [&](const char* what, const std::string& x, const std::string& y) {
    return Status::invalid(where + ": another " + what + " (" + y + ") than the first part (" + x + ")");
  };
  if (a.model != b.model) return differ("model", a.model, b.model);
  if (a.target != b.target) return differ("target", a.target, b.target);
  if (a.golden != b.golden) return differ("golden", a.golden, b.golden);
  if (a.preprocess != b.preprocess) return differ("preprocessing", a.preprocess, b.preprocess);
  if (a.dataset_samples != b.dataset_samples)
    return differ("data set size", std::to_string(a.dataset_samples), std::to_string(b.dataset_samples));
  if (a.shard_count != b.shard_count)
    return differ("shard count", std::to_string(a.shard_count), std::to_string(b.shard_count));
  return Status();
}

}  // namespace

Result<EvaluateReport> merge_reports(const std::vector<std::string>& files) {
  if (files.empty()) return Status::invalid("--merge: no partial reports given");
  FERRY_ASSIGN_OR_RETURN(EvaluateReport out, read_report(files[0]));
  std::set<int> shards{out.shard_index};
  out.parts = {files[0]};
  for (size_t i = 1; i < files.size(); ++i) {
    FERRY_ASSIGN_OR_RETURN(EvaluateReport p, read_report(files[i]));
    FERRY_RETURN_IF_ERROR(same_run(out, p, files[i]));
    if (!shards.insert(p.shard_index).second)
      return Status::invalid("--merge: " + files[i] + " is shard " + std::to_string(p.shard_index) + "/" +
                             std::to_string(p.shard_count) + " again");
    FERRY_RETURN_IF_ERROR(out.aggregate.merge(p.aggregate, files[i]));
    // Shards ran side by side: the merged wall time is the longest; the work adds up.
    out.timing.wall_s = std::max(out.timing.wall_s, p.timing.wall_s);
    out.timing.open_s = std::max(out.timing.open_s, p.timing.open_s);
    out.timing.data_wait_s += p.timing.data_wait_s;
    out.timing.data_work_s += p.timing.data_work_s;
    out.timing.golden_s += p.timing.golden_s;
    out.timing.target_s += p.timing.target_s;
    out.parts.push_back(files[i]);
  }
  if (static_cast<int>(shards.size()) != out.shard_count) {
    std::string missing;
    for (int s = 0; s < out.shard_count; ++s)
      if (!shards.count(s)) missing += (missing.empty() ? "" : ", ") + std::to_string(s) + "/" + std::to_string(out.shard_count);
    return Status::invalid("--merge: shard(s) " + missing + " missing (every shard of the run is needed)");
  }
  out.shard_index = 0;
  out.shard_count = 1;
  out.samples_file.clear();
  out.out_dir.clear();
  return out;
}

namespace {

std::string pct(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:.2f}%", 100 * v.get<double>()) : std::string("-");
}
std::string g(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

std::string format_report(const EvaluateReport& r) {
  const Aggregate& a = r.aggregate;
  std::string s = fmt::format("evaluate {} on {} ({} sample(s){}): golden {}, target {}\n", r.model, r.data, a.samples(),
                              r.shard_count > 1 ? fmt::format(", shard {}/{}", r.shard_index, r.shard_count) : "",
                              r.golden, r.target);
  if (!r.preprocess.empty()) s += "preprocess: " + r.preprocess + "\n";
  nlohmann::json j = a.to_json();
  for (auto& o : j["outputs"]) {
    s += fmt::format("\noutput {}: {} of {} sample(s) pass", o["name"].get<std::string>(), o["passed"].get<int64_t>(),
                     o["samples"].get<int64_t>());
    if (o.contains("top1_agreement"))
      s += fmt::format("; top-1 agreement {} ({} of {}), top-5 {}", pct(o["top1_agreement"]),
                       o["top1_agree"].get<int64_t>(), o["classifier_samples"].get<int64_t>(), pct(o["top5_agreement"]));
    if (o["nonfinite_samples"].get<int64_t>())
      s += fmt::format("; {} sample(s) with NaN/Inf", o["nonfinite_samples"].get<int64_t>());
    s += "\n";
    auto line = [&](const char* name, const nlohmann::json& p, std::vector<const char*> keys) {
      s += fmt::format("  {:<11}", name);
      const bool cosine = std::string(name) == "cosine";
      for (const char* k : keys)
        s += fmt::format(" {}={}", k,
                         !p[k].is_number() ? p[k].dump()
                         : cosine          ? fmt::format("{:.6f}", p[k].get<double>())
                                           : g(p[k].get<double>()));
      s += "\n";
    };
    line("cosine", o["cosine"], {"min", "p0.1", "p1", "p10", "p50"});
    line("max_abs", o["max_abs"], {"p50", "p90", "p99", "max"});
    line("max_rel", o["max_rel"], {"p50", "p90", "p99", "max"});
    line("rel_euclid", o["rel_euclid"], {"p50", "p90", "p99", "max"});
  }
  if (j.contains("labels")) {
    auto& l = j["labels"];
    s += fmt::format("\naccuracy on {} labelled sample(s): top-1 golden {} target {}; top-5 golden {} target {}\n",
                     l["labelled"].get<int64_t>(), pct(l["golden_top1_accuracy"]), pct(l["target_top1_accuracy"]),
                     pct(l["golden_top5_accuracy"]), pct(l["target_top5_accuracy"]));
  }
  if (!a.worst().empty()) {
    s += fmt::format("\nworst {} sample(s):\n", a.worst().size());
    for (auto& w : a.worst()) {
      std::string cls;
      for (auto& o : w.outputs)
        if (o.golden_class && *o.golden_class != *o.target_class)
          cls = fmt::format("  class {} -> {}", *o.golden_class, *o.target_class);
      s += fmt::format("  {:<40} cos {:.6f} relE {}{}\n", w.id, w.worst_cosine(), g(w.worst_rel_euclid()), cls);
    }
    if (!a.worst().front().replay.empty()) s += "replay the worst: " + r.replay_command(a.worst().front()) + "\n";
  }
  const Timing& t = r.timing;
  s += fmt::format("\ntime: {:.1f} s wall ({:.1f} s opening the model), {:.1f} samples/s; golden {:.1f} s, target {:.1f} s, "
                   "data {:.1f} s of work on {} thread(s) ({:.1f} s waited for)\n",
                   t.wall_s, t.open_s, t.rate(a.samples()), t.golden_s, t.target_s, t.data_work_s, r.workers,
                   t.data_wait_s);
  for (auto& n : r.notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace ferry::tools::evaluate
