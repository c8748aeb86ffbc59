// The three renderings of a CompareReport: text for people, JSON ("ferry.compare/1") and CSV for tools.
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "core/shape.h"
#include "tools/compare/compare.h"
#include "tools/compare/compare_internal.h"

namespace ferry::tools::compare {

namespace {

// JSON has no NaN/Inf: non-finite numbers are written as null (NaN) or the strings "inf" / "-inf".
nlohmann::json num(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json metrics_json(const Metrics& m) {
  nlohmann::json j = {{"cosine", num(m.cosine)},         {"max_abs", num(m.max_abs)},
                      {"max_rel", num(m.max_rel)},       {"mean_abs", num(m.mean_abs)},
                      {"rmse", num(m.rmse)},             {"rel_euclid", num(m.rel_euclid)},
                      {"snr_db", num(m.snr_db)},         {"allclose", m.allclose},
                      {"count", m.count},                {"golden_nan", m.golden_nan},
                      {"golden_inf", m.golden_inf},      {"candidate_nan", m.candidate_nan},
                      {"candidate_inf", m.candidate_inf}, {"pass", m.pass}};
  j["kl"] = m.kl ? num(*m.kl) : nlohmann::json(nullptr);
  j["top1"] = m.top1 ? num(*m.top1) : nlohmann::json(nullptr);
  j["top5"] = m.top5 ? num(*m.top5) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json row_json(const Row& r) {
  nlohmann::json j = {{"tensor", r.tensor}, {"onnx_node", r.onnx_node}, {"op_type", r.op_type},
                      {"dtype", r.dtype},   {"shape", r.shape},         {"pass", r.pass()}};
  if (!r.candidate_node.empty()) {
    j["candidate_node"] = r.candidate_node;
    j["candidate_op"] = r.candidate_op;
    j["provenance"] = r.provenance;
  }
  j["metrics"] = r.metrics ? metrics_json(*r.metrics) : nlohmann::json(nullptr);
  if (!r.note.empty()) j["note"] = r.note;
  if (r.single_op || !r.single_op_note.empty()) {
    nlohmann::json s = {{"nodes", r.single_op_nodes}};
    s["metrics"] = r.single_op ? metrics_json(*r.single_op) : nlohmann::json(nullptr);
    s["pass"] = r.single_op && r.single_op->pass;
    // Inherited only: the tensor fails in the full run but its unit passes on golden inputs.
    s["inherited_only"] = r.metrics && !r.metrics->pass && r.single_op && r.single_op->pass;
    if (!r.single_op_note.empty()) s["note"] = r.single_op_note;
    j["single_op"] = s;
  }
  return j;
}

std::string fmt_num(double v, const char* spec = "{:.4g}") {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format(fmt::runtime(spec), v);
}

std::string verdict(const Row& r) {
  if (!r.metrics) return "n/a";
  return r.metrics->pass ? "ok" : "FAIL";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

nlohmann::json report_to_json(const CompareReport& r) {
  nlohmann::json j;
  j["schema"] = "ferry.compare/1";
  j["model"] = r.model;
  j["golden"] = r.golden;
  j["candidate"] = r.candidate;
  j["thresholds"] = {{"cosine_min", r.thresholds.cosine_min},
                     {"rel_euclid_max", r.thresholds.rel_euclid_max},
                     {"atol", r.thresholds.atol},
                     {"rtol", r.thresholds.rtol}};
  j["inputs"] = nlohmann::json::array();
  for (const PreparedInput& p : r.inputs)
    j["inputs"].push_back({{"name", p.name}, {"shape", p.tensor.dims()}, {"dtype", std::string(dtype_name(p.tensor.dtype()))},
                           {"source", p.source}});
  j["outputs"] = nlohmann::json::array();
  for (const Row& o : r.outputs) j["outputs"].push_back(row_json(o));
  j["pass"] = r.pass();
  j["layerwise"] = r.layerwise;
  j["layers"] = nlohmann::json::array();
  for (const Row& l : r.layers) j["layers"].push_back(row_json(l));
  j["layers_missing"] = r.layers_missing;
  j["first_divergent_span"] = nullptr;
  if (r.first_divergent) {
    const Row& fd = r.layers[*r.first_divergent];
    j["first_divergent_node"] = fd.onnx_node.empty() ? fd.tensor : fd.onnx_node;
    j["first_divergent_tensor"] = fd.tensor;
    // A fused candidate node covers several ONNX nodes; any of them may hold the fault. So does every node of
    // a span the candidate has no tensors for.
    j["first_divergent_provenance"] = r.divergence_span ? r.divergence_span->nodes
                                      : fd.provenance.empty() ? std::vector<std::string>{fd.onnx_node}
                                                              : fd.provenance;
    if (const auto& s = r.divergence_span) {
      auto or_null = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
      nlohmann::json lacked = nlohmann::json::array();
      for (const auto& [node, tensor] : s->lacked) lacked.push_back({{"node", node}, {"tensor", tensor}});
      j["first_divergent_span"] = {{"last_match_node", or_null(s->last_match)},
                                   {"last_match_tensor", or_null(s->last_match_tensor)},
                                   {"nodes", s->nodes},
                                   {"lacked", lacked},
                                   {"message", describe_span(*s)}};
    }
  } else {
    j["first_divergent_provenance"] = nlohmann::json::array();
    j["first_divergent_node"] = nullptr;
    j["first_divergent_tensor"] = nullptr;
  }
  j["nonfinite_tensors"] = r.nonfinite_tensors;
  if (r.ranges) {
    nlohmann::json rows = nlohmann::json::array();
    for (const RangeRow& rr : r.range_rows)
      rows.push_back({{"tensor", rr.tensor},
                      {"onnx_node", rr.onnx_node},
                      {"count", rr.count},
                      {"nonfinite", rr.nonfinite},
                      {"min", num(rr.min)},
                      {"max", num(rr.max)},
                      {"absmax", num(rr.absmax)},
                      {"fp16_overflow_fraction", rr.fp16_overflow},
                      {"fp16_underflow_fraction", rr.fp16_underflow},
                      {"bf16_overflow_fraction", rr.bf16_overflow},
                      {"bf16_underflow_fraction", rr.bf16_underflow}});
    j["ranges"] = {{"tensors", rows},
                   {"fp16_overflow", r.fp16_overflow},
                   {"fp16_underflow", r.fp16_underflow},
                   {"bf16_overflow", r.bf16_overflow},
                   {"bf16_underflow", r.bf16_underflow}};
  }
  j["advisor"] = nlohmann::json::array();
  for (const AdvisorNote& a : r.advisor) j["advisor"].push_back({{"kind", a.kind}, {"message", a.message}});
  j["notes"] = r.notes;
  if (!r.repro_dir.empty()) j["repro"] = {{"dir", r.repro_dir}, {"command", r.repro_command}};
  return j;
}

std::string report_to_csv(const CompareReport& r) {
  std::ostringstream o;
  o << "kind,tensor,onnx_node,op_type,candidate_node,shape,cosine,max_abs,max_rel,mean_abs,rmse,rel_euclid,kl,snr_db,"
       "allclose,top1,top5,candidate_nan,candidate_inf,pass,single_op_cosine,single_op_rel_euclid,single_op_pass\n";
  auto line = [&](const char* kind, const Row& x) {
    auto opt = [](const std::optional<double>& v) { return v ? fmt_num(*v, "{:.9g}") : std::string(); };
    o << kind << ',' << csv_field(x.tensor) << ',' << csv_field(x.onnx_node) << ',' << csv_field(x.op_type) << ','
      << csv_field(x.candidate_node) << ',' << csv_field(dims_to_string(x.shape)) << ',';
    if (x.metrics) {
      const Metrics& m = *x.metrics;
      for (double v : {m.cosine, m.max_abs, m.max_rel, m.mean_abs, m.rmse, m.rel_euclid})
        o << fmt_num(v, "{:.9g}") << ',';
      o << opt(m.kl) << ',' << fmt_num(m.snr_db, "{:.9g}") << ',' << (m.allclose ? "true" : "false") << ','
        << opt(m.top1) << ',' << opt(m.top5) << ',' << m.candidate_nan << ',' << m.candidate_inf << ','
        << (m.pass ? "true" : "false") << ',';
    } else {
      o << ",,,,,,,,,,,,,false,";
    }
    if (x.single_op)
      o << fmt_num(x.single_op->cosine, "{:.9g}") << ',' << fmt_num(x.single_op->rel_euclid, "{:.9g}") << ','
        << (x.single_op->pass ? "true" : "false");
    else
      o << ",,";
    o << "\n";
  };
  for (const Row& x : r.outputs) line("output", x);
  for (const Row& x : r.layers) line("layer", x);
  return o.str();
}

std::string format_report(const CompareReport& r) {
  std::ostringstream o;
  o << "golden:    " << r.golden << "\n";
  o << "candidate: " << r.candidate << "\n";
  o << "inputs:\n";
  for (const PreparedInput& p : r.inputs) o << "  " << p.name << ": " << p.tensor.describe() << " (" << p.source << ")\n";
  o << fmt::format("thresholds: cosine >= {}, relative Euclidean <= {} (allclose: atol {}, rtol {})\n",
                   r.thresholds.cosine_min, r.thresholds.rel_euclid_max, r.thresholds.atol, r.thresholds.rtol);
  o << "outputs:\n";
  for (const Row& x : r.outputs) {
    o << fmt::format("  {} {}{}: ", x.tensor, x.dtype, dims_to_string(x.shape));
    if (!x.metrics) {  // an output that could not be measured (shapes differ, no golden) fails
      o << "FAIL (" << x.note << ")\n";
      continue;
    }
    const Metrics& m = *x.metrics;
    o << fmt::format("{}  cos {}  relE {}  maxabs {}  maxrel {}  meanabs {}  rmse {}  snr {} dB", verdict(x),
                     fmt_num(m.cosine, "{:.6f}"), fmt_num(m.rel_euclid), fmt_num(m.max_abs), fmt_num(m.max_rel),
                     fmt_num(m.mean_abs), fmt_num(m.rmse), fmt_num(m.snr_db, "{:.1f}"));
    if (m.kl) o << "  kl " << fmt_num(*m.kl);
    o << "  allclose " << (m.allclose ? "yes" : "no");
    if (m.top1) o << "  top1 " << fmt_num(*m.top1, "{:.3f}");
    if (m.top5) o << "  top5 " << fmt_num(*m.top5, "{:.3f}");
    if (m.candidate_nan + m.candidate_inf > 0) o << fmt::format("  candidate NaN {} Inf {}", m.candidate_nan, m.candidate_inf);
    o << "\n";
  }
  if (r.layerwise) {
    int fails = 0;
    for (const Row& l : r.layers) fails += !l.pass();
    o << fmt::format("layerwise: {} tensor(s) compared, {} fail\n", r.layers.size(), fails);
    o << fmt::format("  {:>4}  {:<28} {:<14} {:<28} {:>10} {:>10} {:>10}  {:<5}", "#", "onnx node", "op", "tensor",
                     "cos", "relE", "maxabs", "");
    if (r.single_op) o << fmt::format(" {:>10} {:>10}  {}", "single cos", "single relE", "error");
    o << "\n";
    for (size_t i = 0; i < r.layers.size(); ++i) {
      const Row& l = r.layers[i];
      std::string cos = l.metrics ? fmt_num(l.metrics->cosine, "{:.6f}") : "-";
      std::string re = l.metrics ? fmt_num(l.metrics->rel_euclid) : "-";
      std::string ma = l.metrics ? fmt_num(l.metrics->max_abs) : "-";
      o << fmt::format("  {:>4}  {:<28} {:<14} {:<28} {:>10} {:>10} {:>10}  {:<5}", i, l.onnx_node, l.op_type, l.tensor,
                       cos, re, ma, verdict(l));
      if (r.single_op) {
        if (l.single_op) {
          const char* kind = l.pass() ? "" : (l.single_op->pass ? "inherited" : "own");
          o << fmt::format(" {:>10} {:>10}  {}", fmt_num(l.single_op->cosine, "{:.6f}"), fmt_num(l.single_op->rel_euclid),
                           kind);
        } else {
          o << "  (" << l.single_op_note << ")";
        }
      }
      if (!l.note.empty()) o << "  (" << l.note << ")";
      if (l.metrics && l.metrics->candidate_nan + l.metrics->candidate_inf > 0)
        o << fmt::format("  NaN {} Inf {}", l.metrics->candidate_nan, l.metrics->candidate_inf);
      o << "\n";
    }
    if (r.divergence_span) {
      o << describe_span(*r.divergence_span) << " (first divergent tensor '" << r.layers[*r.first_divergent].tensor
        << "')\n";
    } else if (r.first_divergent) {
      const Row& fd = r.layers[*r.first_divergent];
      o << "first divergent node: '" << (fd.onnx_node.empty() ? fd.tensor : fd.onnx_node) << "' (tensor '" << fd.tensor
        << "'";
      if (!fd.candidate_node.empty() && fd.candidate_node != fd.onnx_node)
        o << ", candidate node '" << fd.candidate_node << "' " << fd.candidate_op;
      if (fd.provenance.size() > 1) {
        std::string covers;
        for (const std::string& n : fd.provenance) covers += (covers.empty() ? "" : ", ") + n;
        o << "; computed by one " << fd.candidate_op << " covering " << covers;
      }
      o << ")\n";
    } else {
      o << "first divergent node: none\n";
    }
  }
  if (r.ranges) {
    o << "ranges (golden values):\n";
    o << fmt::format("  {:<28} {:<20} {:>11} {:>11} {:>11} {:>9} {:>9}\n", "tensor", "onnx node", "min", "max", "absmax",
                     "fp16 ovf", "fp16 sub");
    for (const RangeRow& rr : r.range_rows)
      o << fmt::format("  {:<28} {:<20} {:>11} {:>11} {:>11} {:>8.3f}% {:>8.3f}%\n", rr.tensor, rr.onnx_node,
                       fmt_num(rr.min), fmt_num(rr.max), fmt_num(rr.absmax), 100 * rr.fp16_overflow,
                       100 * rr.fp16_underflow);
    auto list = [&](const char* what, const std::vector<std::string>& v) {
      // The JSON has them all; ten names are what a reader takes in.
      std::string s;
      for (size_t i = 0; i < v.size() && i < 10; ++i) s += (s.empty() ? "" : ", ") + v[i];
      if (v.size() > 10) s += fmt::format(" (and {} more)", v.size() - 10);
      o << "  " << what << ": " << (s.empty() ? "none" : s) << "\n";
    };
    list("would overflow in fp16", r.fp16_overflow);
    list("would flush in fp16 (>1% of non-zeros below 2^-14)", r.fp16_underflow);
    list("would overflow in bf16", r.bf16_overflow);
    list("would flush in bf16 (>1% of non-zeros below 2^-126)", r.bf16_underflow);
  }
  if (!r.nonfinite_tensors.empty()) {
    o << "NaN/Inf in the candidate: first in '" << r.nonfinite_tensors.front() << "'";
    if (r.nonfinite_tensors.size() > 1) o << " (and " << r.nonfinite_tensors.size() - 1 << " tensor(s) after it)";
    o << "\n";
  }
  for (const std::string& n : r.notes) o << "note: " << n << "\n";
  if (!r.repro_dir.empty())
    o << "repro: the first divergent node, standalone, in " << r.repro_dir << " (README.md); reproduce with: cd "
      << r.repro_dir << " && " << r.repro_command << "\n";
  for (const AdvisorNote& a : r.advisor) o << "advisor: " << a.message << "\n";
  o << "result: " << (r.pass() ? "PASS" : "FAIL") << " (" << r.outputs.size() << " output(s))\n";
  return o.str();
}

}  // namespace ferry::tools::compare
