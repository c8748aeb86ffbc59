// `ferry check` (check.h). The model is opened twice: as written (rows, dynamic dims) and as compile
// would see it (shapes fixed, level-1 cleanup: folding, identities, dead code), which is what gets
// placed and partitioned. A node of the original that no longer exists folded away (or passed its
// input through); its row says so and it counts as on the device, since nothing of it runs.
#include "tools/check.h"

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "runtime/prepare.h"
#include "targets/partition.h"
#include "runtime/model_session.h"
#include "tools/run_inputs.h"

namespace ferry::tools {

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "dim 2 (height), dim 3 (width)": an input's dynamic dims by position and name.
std::string dynamic_dims_text(const Shape& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!s[i].is_static()) out.push_back("dim " + std::to_string(i) + (s[i].symbol.empty() ? "" : " (" + s[i].symbol + ")"));
  return join(out);
}

// What the target needs for an input with dynamic dims, with the flags written for those dims.
std::string mode_advice(const targets::Target& t, const ir::Value* v) {
  const Shape& s = *v->shape;
  std::vector<int> dyn;
  for (size_t i = 0; i < s.size(); ++i)
    if (!s[i].is_static()) dyn.push_back(static_cast<int>(i));
  if (t.allows_dynamic("any")) return t.name + " runs dynamic dims as they are";
  std::vector<std::string> ways;
  if (t.allows_dynamic("gears")) {
    if (dyn.size() == 1 && dyn[0] == 0) {
      ways.push_back("gears (compile --dynamic-batch 1,2,4,8)");
    } else {
      std::string names;
      for (int i : dyn) names += (names.empty() ? "" : ",") + ("<" + (s[i].symbol.empty() ? "d" + std::to_string(i) : s[i].symbol) + ">");
      ways.push_back("gears (compile --dynamic-dims \"" + names + ";...\", one value per dynamic dim in each gear)");
    }
  }
  if (t.allows_dynamic("ranges")) {
    std::string dims;
    for (size_t i = 0; i < s.size(); ++i)
      dims += (i ? "," : "") + (s[i].is_static() ? std::to_string(s[i].value) : std::string("<min>~<max>"));
    ways.push_back("ranges (--input-shape " + v->name + ":" + dims + ")");
  }
  ways.push_back("a fixed shape (--shape " + shape_argument(*v) + ")");
  return t.name + " needs " + join(ways, " or ");
}

// Nodes that compute with shapes of inputs whose dims are unknown: they read a Shape/Size output, or a
// value computed only from such outputs and constants. With the dims fixed they fold away or get
// constant inputs, so their placement here is not the one a fixed shape gets.
std::vector<const ir::Node*> shape_dependent_nodes(const ir::Graph& g) {
  std::set<const ir::Value*> from_shape;
  std::vector<const ir::Node*> out;
  for (const auto& n : g.nodes) {
    bool reads = false, only_shapes = true;
    for (const ir::Value* v : n->inputs) {
      if (!v || v->is_constant()) continue;
      if (from_shape.count(v)) reads = true;
      else only_shapes = false;
    }
    const bool shape_op = n->domain.empty() && (n->op_type == "Shape" || n->op_type == "Size");
    if (reads) out.push_back(n.get());
    if (shape_op || (reads && only_shapes))
      for (const ir::Value* v : n->outputs)
        if (v) from_shape.insert(v);
  }
  return out;
}

}  // namespace

std::string bytes_text(int64_t b) {
  if (b < 0) return "unknown (dynamic shapes)";
  if (b < 1024) return std::to_string(b) + " B";
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
}

Result<CheckReport> check_model(const std::string& path, const CheckOptions& opts) {
  FERRY_ASSIGN_OR_RETURN(targets::Target target, targets::load_target(opts.target));
  FERRY_ASSIGN_OR_RETURN(std::optional<targets::Target> host, targets::load_host_target(target));
  frontend::ImportOptions imp;
  imp.check_ops = false;  // checking a model ferry cannot run is part of the point
  imp.allow_newer_opset = true;  // a finding below, not a refusal
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> original, runtime::open_model(path, imp));
  std::unique_ptr<ir::Model> model = original->clone();

  CheckReport rep;
  rep.model = path;
  rep.target = target.name;
  rep.target_source = target.source;
  rep.emulated = target.emulated;
  rep.default_precision = target.default_precision;
  if (std::string newer = frontend::newer_opset_note(*original); !newer.empty())
    rep.findings.push_back(newer + "; results may be wrong");

  // Shapes: the ones given. An input whose only dynamic dim is the batch is analysed at batch 1, as
  // every batch gear fixes it; other dims not given stay unknown (a guess such as 1 would break spatial
  // shape computations), and the findings say what they block.
  std::map<std::string, std::vector<int64_t>> shapes = opts.input_shapes;
  std::vector<std::string> dynamic_inputs;
  for (const ir::Value* v : original->graph->inputs) {
    if (v->is_constant()) continue;
    if (!shapes.count(v->name) && v->shape && !is_static(*v->shape)) {
      dynamic_inputs.push_back(v->name);
      const Shape& s = *v->shape;
      bool batch_only = !s[0].is_static();
      for (size_t i = 1; i < s.size(); ++i) batch_only = batch_only && s[i].is_static();
      rep.findings.push_back("input '" + v->name + "' " + shape_to_string(s) + " has unknown " + dynamic_dims_text(s) +
                             ": " + mode_advice(target, v) + (batch_only ? "; analysed at batch 1" : ""));
      if (batch_only) {
        std::vector<int64_t> dims{1};
        for (size_t i = 1; i < s.size(); ++i) dims.push_back(s[i].value);
        shapes[v->name] = dims;
      }
    }
  }
  for (const auto& [name, dims] : opts.input_shapes) {
    ir::Value* v = original->graph->find_local_value(name);
    if (!v || !v->is_graph_input) return Status::invalid("--input-shape names '" + name + "', which is not a model input");
  }
  rep.shape_mode = dynamic_inputs.empty() ? "static" : (target.allows_dynamic("any") ? "dynamic" : "gears or ranges");

  // The placement `run --target` makes (runtime/prepare.h): shapes fixed, level-1 cleanup, then placed.
  runtime::PrepareOptions po;
  po.opt_level = 1;
  po.input_shapes = shapes;
  po.target = opts.target;
  po.precision_given = true;  // fp32: placement is what is checked, rounding nodes would only add rows
  runtime::PrepareReport prepared;
  Status st = runtime::prepare(*model, po, &prepared);
  if (!st.ok()) {
    rep.findings.push_back("constant folding with fixed shapes failed (" + st.to_string() +
                           "); placed as written");
    model = original->clone();
    po.opt_level = 0;
    po.input_shapes.clear();
    FERRY_RETURN_IF_ERROR(runtime::prepare(*model, po, &prepared));
  }
  ir::Graph& g = *model->graph;

  // Placement of the folded graph's nodes, by name; provenance tells which original nodes survive.
  std::set<const ir::Value*> dd = targets::data_dependent_values(target, g);
  std::map<std::string, targets::NodePlacement> by_name(prepared.placement.begin(), prepared.placement.end());
  std::set<std::string> covered;
  std::vector<std::string> dd_nodes;
  for (const auto& n : g.nodes) {
    for (const auto& p : n->provenance) covered.insert(p);
    for (const ir::Value* v : n->outputs)
      if (v && dd.count(v) && v->producer == n.get() &&
          (n->op_type == "NonZero" || n->op_type == "Unique" || n->op_type == "NonMaxSuppression" ||
           n->op_type == "Compress")) {
        dd_nodes.push_back(n->label());
        break;
      }
  }
  if (dynamic_inputs.size() > static_cast<size_t>(std::count_if(dynamic_inputs.begin(), dynamic_inputs.end(),
                                                                 [&](const std::string& n) { return shapes.count(n) > 0; }))) {
    // What the unknown dims block: shape computations that fold once they are fixed.
    std::vector<std::string> host_names;
    const auto blocked = shape_dependent_nodes(g);
    for (const ir::Node* n : blocked)
      if (auto it = by_name.find(n->name); it != by_name.end() && (it->second.placement == targets::Placement::kHost ||
                                                                   it->second.placement == targets::Placement::kUnsupported))
        host_names.push_back(n->label());
    if (!blocked.empty())
      rep.findings.push_back(
          std::to_string(blocked.size()) + " node(s) compute with the unknown dims (Shape/Size chains) and would fold or "
          "get constant inputs once they are fixed" +
          (host_names.empty() ? "" : "; " + std::to_string(host_names.size()) + " of them are host fallbacks here (" +
                                         join(host_names) + ")") +
          ": pass --shape to analyse the shapes you will run");
  }
  for (const auto& n : original->graph->nodes) {
    CheckRow row{n->name, n->op_type, n->domain, n->opset, targets::Placement::kDevice, "", ""};
    auto it = by_name.find(n->name);
    if (it != by_name.end()) {
      row.placement = it->second.placement;
      row.reason = it->second.reason;
      row.rule = it->second.rule;
    } else if (covered.count(n->name)) {
      row.reason = "removed: passes its input through";
    } else {
      row.reason = "folds to a constant once input shapes are fixed";
      rep.folded.push_back(n->label());
    }
    OpSummary& s = rep.by_op[(n->domain.empty() ? "" : n->domain + ".") + n->op_type];
    switch (row.placement) {
      case targets::Placement::kDevice: ++s.device, ++rep.device; break;
      case targets::Placement::kRewritten: ++s.rewritten, ++rep.rewritten; break;
      case targets::Placement::kHost: ++s.host, ++rep.host; break;
      case targets::Placement::kUnsupported: ++s.unsupported, ++rep.unsupported; break;
    }
    rep.rows.push_back(std::move(row));
  }
  if (!rep.folded.empty()) {
    std::vector<std::string> first(rep.folded.begin(), rep.folded.begin() + std::min<size_t>(rep.folded.size(), 4));
    rep.findings.push_back(std::to_string(rep.folded.size()) + " node(s) of shape subgraphs fold away once input shapes " +
                           "are fixed (" + join(first) + (rep.folded.size() > 4 ? ", ..." : "") +
                           "); compile folds them, an exporter-side onnxsim is not needed");
  }
  if (!dd_nodes.empty())
    rep.findings.push_back("data-dependent shapes from " + join(dd_nodes) +
                           ": intermediate shapes stay dynamic, which rules out gears (--dynamic-batch/--dynamic-dims)" +
                           (target.data_dependent_shapes == "host" ? "; these nodes run on the host" : ""));

  // Partition the folded graph: rewrites applied, transfers counted.
  auto part = targets::partition(*model, target, host ? &*host : nullptr);
  if (!part.ok()) return Status(part.status()).with_context("partitioning for " + target.name);
  // The partitioner may keep a device node on the host between host nodes: the rows say so.
  for (CheckRow& row : rep.rows) {
    auto it = part->by_name.find(row.name);
    if (it == part->by_name.end() || row.placement != targets::Placement::kDevice ||
        it->second.placement != targets::Placement::kHost)
      continue;
    row.placement = targets::Placement::kHost;
    row.reason = it->second.reason;
    OpSummary& s = rep.by_op[(row.domain.empty() ? "" : row.domain + ".") + row.op];
    --s.device, ++s.host, --rep.device, ++rep.host;
  }
  rep.input_bytes = part->input_bytes;
  rep.output_bytes = part->output_bytes;
  rep.transfer_bytes = part->transfer_bytes;
  rep.transfers = static_cast<int64_t>(part->transfers.size());
  int dev_segments = 0;
  for (const auto& s : part->segments) dev_segments += s.device;
  rep.segments = dev_segments;
  if (host && (part->host_nodes > 0 || part->unsupported_nodes > 0)) {
    std::vector<std::string> t;
    for (const auto& tr : part->transfers)
      t.push_back(tr.value + (tr.to_device ? " host->device " : " device->host ") + bytes_text(tr.bytes));
    if (!t.empty())
      rep.findings.push_back(std::to_string(t.size()) + " transfer(s) at device/host borders: " +
                             join(std::vector<std::string>(t.begin(), t.begin() + std::min<size_t>(t.size(), 6))) +
                             (t.size() > 6 ? ", ..." : ""));
  }
  if (target.emulated)
    rep.findings.push_back(target.name + " has no local device: `run/compare/bench --target " + target.name +
                           "` emulate its device part on the CPU under " + target.default_precision +
                           " (timings are CPU timings)");
  return rep;
}

bool check_fails(const CheckReport& r, const std::string& fail_on) {
  if (fail_on == "unsupported") return r.unsupported > 0;
  if (fail_on == "fallback") return r.unsupported > 0 || r.host > 0;
  return false;
}

std::string format_check(const CheckReport& r) {
  std::ostringstream o;
  o << "model:  " << r.model << "\n";
  o << "target: " << r.target << (r.emulated ? " (emulated: no local device; its part runs on the CPU under " +
                                                   r.default_precision + ")"
                                             : "")
    << "\n";
  o << "source: " << r.target_source << "\n\n";
  size_t wn = 4, wo = 2;
  for (const auto& row : r.rows) wn = std::max(wn, row.name.size()), wo = std::max(wo, row.op.size());
  wn = std::min<size_t>(wn, 48);
  o << fmt::format("{:<{}}  {:<{}}  {:>5}  {:<13}  {}\n", "node", wn, "op", wo, "opset", "placement", "reason");
  for (const auto& row : r.rows) {
    std::string reason = row.reason;
    if (!row.rule.empty()) reason = row.rule + ": " + reason;
    o << fmt::format("{:<{}}  {:<{}}  {:>5}  {:<13}  {}\n", row.name, wn, row.op, wo, row.opset,
                     targets::placement_name(row.placement), reason);
  }
  o << "\nby op type:\n";
  o << fmt::format("  {:<28} {:>7} {:>9} {:>6} {:>11}\n", "op", "device", "rewritten", "host", "unsupported");
  for (const auto& [op, s] : r.by_op)
    o << fmt::format("  {:<28} {:>7} {:>9} {:>6} {:>11}\n", op, s.device, s.rewritten, s.host, s.unsupported);
  o << "\nfindings:\n";
  if (r.findings.empty()) o << "  (none)\n";
  for (const auto& f : r.findings) o << "  - " << f << "\n";
  o << "\nsummary: " << r.rows.size() << " nodes: " << r.device << " on the device, " << r.rewritten << " rewritten, "
    << r.host << " host fallback, " << r.unsupported << " unsupported; " << r.segments << " device subgraph(s)\n";
  o << "bytes per inference: inputs " << bytes_text(r.input_bytes) << " to the device, outputs "
    << bytes_text(r.output_bytes) << " back, " << bytes_text(r.transfer_bytes) << " across " << r.transfers
    << " fallback border(s)\n";
  return o.str();
}

nlohmann::json check_to_json(const CheckReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["target"] = r.target;
  j["target_source"] = r.target_source;
  j["emulated"] = r.emulated;
  j["default_precision"] = r.default_precision;
  j["nodes"] = nlohmann::json::array();
  for (const auto& row : r.rows)
    j["nodes"].push_back({{"name", row.name}, {"op", row.op}, {"domain", row.domain}, {"opset", row.opset},
                          {"placement", targets::placement_name(row.placement)}, {"reason", row.reason},
                          {"rule", row.rule}});
  for (const auto& [op, s] : r.by_op)
    j["by_op"][op] = {{"device", s.device}, {"rewritten", s.rewritten}, {"host", s.host}, {"unsupported", s.unsupported}};
  j["findings"] = r.findings;
  j["folded"] = r.folded;
  j["shape_mode"] = r.shape_mode;
  j["summary"] = {{"nodes", r.rows.size()}, {"device", r.device}, {"rewritten", r.rewritten}, {"host", r.host},
                  {"unsupported", r.unsupported}, {"device_subgraphs", r.segments}};
  j["bytes"] = {{"inputs", r.input_bytes}, {"outputs", r.output_bytes}, {"transfers", r.transfer_bytes},
                {"borders", r.transfers}};
  return j;
}

std::string check_to_csv(const CheckReport& r) {
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::ostringstream o;
  o << "name,op,opset,placement,rule,reason\n";
  for (const auto& row : r.rows)
    o << field(row.name) << "," << field((row.domain.empty() ? "" : row.domain + ".") + row.op) << "," << row.opset
      << "," << field(targets::placement_name(row.placement)) << "," << field(row.rule) << "," << field(row.reason)
      << "\n";
  return o.str();
}

}  // namespace ferry::tools
