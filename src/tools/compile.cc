#include "tools/compile.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "format/ferry_file.h"
#include "frontend/onnx/import.h"
#include "tools/evaluate/preprocess.h"
#include "targets/placement.h"
#include "runtime/dynamic_shapes.h"
#include "runtime/model_session.h"

namespace ferry::tools {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t count_nodes(const ir::Graph& g) {
  int64_t n = 0;
  for (const auto& node : g.nodes) {
    n++;
    for (const ir::Graph* sg : node->subgraphs()) n += count_nodes(*sg);
  }
  return n;
}

Result<std::vector<int64_t>> parse_dims(const std::string& text, const std::string& flag) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12)
      return Status::invalid(flag + ": '" + part + "' is not a dimension (expected a non-negative integer)");
    dims.push_back(std::stoll(part));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return dims;
}

// Makes dim 0 of every graph input one shared symbol, so the stored graph is batch-generic.
Status make_batch_symbolic(ir::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes) {
  ir::Graph& g = *model.graph;
  for (const auto& [name, dims] : shapes) {
    FERRY_RETURN_IF_ERROR(runtime::check_fixed_shape(g, name, dims).with_context("--input-shape"));
    if (dims.empty()) return Status::invalid("--input-shape " + name + ": a scalar has no batch dimension");
    ir::Value* v = g.find_local_value(name);
    v->shape = to_shape(dims);
  }
  std::string symbol;
  int64_t fixed = -1;
  std::string fixed_from;
  for (ir::Value* v : g.inputs) {
    if (v->is_constant()) continue;
    if (v->kind != ir::ValueKind::kTensor || !v->shape || v->shape->empty())
      return Status::invalid("--dynamic-batch: input '" + v->name + "' (" + v->type_string() +
                             ") has no batch dimension; every input needs one (dimension 0)");
    const Dim& d = (*v->shape)[0];
    if (!d.is_static()) {
      if (symbol.empty()) symbol = d.symbol;
    } else if (shapes.count(v->name) == 0) {
      if (fixed >= 0 && d.value != fixed)
        return Status::invalid("--dynamic-batch: inputs '" + fixed_from + "' and '" + v->name +
                               "' have different sizes in dimension 0 (" + std::to_string(fixed) + " and " +
                               std::to_string(d.value) + "), so it is not a batch dimension");
      fixed = d.value;
      fixed_from = v->name;
    }
  }
  if (symbol.empty()) symbol = "batch";
  for (ir::Value* v : g.inputs)
    if (!v->is_constant()) (*v->shape)[0] = Dim::symbolic(symbol);
  return Status();
}


// --input-shape ranges and --dynamic-dims: the dims stay symbolic in the stored graph and what the
// model accepts goes into its metadata (runtime/dynamic_shapes.h), which the loader enforces.
Status apply_dynamic_shapes(ir::Model& model, const CompileRequest& req, CompileReport& r) {
  if (req.input_ranges.empty() && req.dynamic_dims.empty()) return Status();
  if (!req.dynamic_batch.empty())
    return Status::invalid("--dynamic-batch cannot be combined with --dynamic-dims or --input-shape ranges");
  ir::Graph& g = *model.graph;
  for (const auto& [name, dims] : req.prepare.input_shapes) {
    FERRY_RETURN_IF_ERROR(runtime::check_fixed_shape(g, name, dims).with_context("--input-shape"));
    g.find_local_value(name)->shape = to_shape(dims);
  }
  FERRY_RETURN_IF_ERROR(runtime::apply_ranges(g, req.input_ranges));
  if (!req.dynamic_dims.empty()) {
    auto pos = runtime::dynamic_positions(g);
    std::string where;
    for (const auto& [name, dim] : pos) where += (where.empty() ? "" : ", ") + name + " dim " + std::to_string(dim);
    if (pos.empty())
      return Status::invalid("--dynamic-dims: the model has no dynamic input dims (mark them -1 with --input-shape, "
                             "e.g. input:1,3,-1,-1)");
    if (pos.size() != req.dynamic_dims[0].size())
      return Status::invalid("--dynamic-dims: each gear gives " + std::to_string(req.dynamic_dims[0].size()) +
                             " value(s), but the model has " + std::to_string(pos.size()) + " dynamic input dim(s) (" +
                             where + ")");
    r.dynamic_dims = runtime::dims_gears_to_string(req.dynamic_dims);
    model.metadata[runtime::kDynamicDimsKey] = r.dynamic_dims;
  } else {
    runtime::InputRanges ranged;
    for (const auto& [name, dims] : req.input_ranges)
      for (const auto& d : dims)
        if (d.first != d.second) ranged[name] = dims;
    if (!ranged.empty()) {
      r.input_ranges = runtime::ranges_to_string(ranged);
      model.metadata[runtime::kInputRangesKey] = r.input_ranges;
    }
  }
  return Status();
}

}  // namespace

Result<std::vector<int64_t>> parse_gears(const std::string& arg) {
  FERRY_ASSIGN_OR_RETURN(auto gears, parse_dims(arg, "--dynamic-batch"));
  if (gears.empty()) return Status::invalid("--dynamic-batch: expected batch sizes, e.g. 1,2,4,8");
  for (int64_t g : gears)
    if (g < 1 || g > (int64_t{1} << 20))
      return Status::invalid("--dynamic-batch: batch size " + std::to_string(g) + " is not in 1.." +
                             std::to_string(int64_t{1} << 20));
  std::sort(gears.begin(), gears.end());
  if (std::adjacent_find(gears.begin(), gears.end()) != gears.end())
    return Status::invalid("--dynamic-batch: '" + arg + "' lists a batch size twice");
  return gears;
}

namespace {

// The nodes the target put on the host, one "name<TAB>placement<TAB>reason" line each, for the file's
// metadata (runtime::kHostNodesKey): reports on the compiled file count what was decided here.
std::string host_nodes_text(const runtime::PrepareReport& rep) {
  std::string s;
  for (const auto& [name, p] : rep.placement)
    if (p.placement == targets::Placement::kHost || p.placement == targets::Placement::kUnsupported)
      s += name + "\t" + targets::placement_name(p.placement) + "\t" + p.reason + "\n";
  return s;
}

}  // namespace

Result<CompileReport> compile_model(const CompileRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  CompileReport r;
  r.output_path = req.output_path;
  r.gears = req.dynamic_batch;
  frontend::ImportOptions import;
  import.allow_newer_opset = req.allow_newer_opset;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, frontend::load_onnx(req.model_path, import));
  r.import_s = since(t0);
  if (!req.preprocess.empty()) {
    FERRY_ASSIGN_OR_RETURN(evaluate::PreprocessSpec spec, evaluate::parse_preprocess(req.preprocess));
    FERRY_RETURN_IF_ERROR(evaluate::insert_preprocess(*model, spec).with_context(req.model_path));
  }
  r.nodes_before = count_nodes(*model->graph);

  const auto t1 = std::chrono::steady_clock::now();
  runtime::PrepareOptions po = req.prepare;
  if (!req.dynamic_batch.empty()) {
    // The stored graph keeps a symbolic batch; each gear is fixed when the file is loaded.
    FERRY_RETURN_IF_ERROR(make_batch_symbolic(*model, req.prepare.input_shapes).with_context(req.model_path));
    po.input_shapes.clear();
  }
  FERRY_RETURN_IF_ERROR(apply_dynamic_shapes(*model, req, r).with_context(req.model_path));
  FERRY_RETURN_IF_ERROR(runtime::prepare(*model, po, &r.prepared));
  r.optimize_s = since(t1);
  r.nodes_after = count_nodes(*model->graph);
  if (std::string hosts = host_nodes_text(r.prepared); !hosts.empty()) model->metadata[runtime::kHostNodesKey] = hosts;

  format::CompileOptions co;
  co.opt_level = req.prepare.opt_level;
  co.input_shapes = req.prepare.input_shapes;
  co.dynamic_batch = req.dynamic_batch;
  co.precision = passes::to_string(r.prepared.precision.mode);
  co.target = req.prepare.target;
  co.cpu_options = backends::to_string(req.cpu);
  std::error_code ec;
  co.source_path = std::filesystem::absolute(req.model_path, ec).string();
  struct stat sb;
  if (::stat(req.model_path.c_str(), &sb) == 0) {
    co.source_size = static_cast<uint64_t>(sb.st_size);
    co.source_mtime_ns = static_cast<int64_t>(sb.st_mtim.tv_sec) * 1'000'000'000 + sb.st_mtim.tv_nsec;
  }
  const auto t2 = std::chrono::steady_clock::now();
  FERRY_RETURN_IF_ERROR(format::write_model(*model, co, req.output_path));
  r.write_s = since(t2);

  // Load what was written, every gear prepared: a file that would not load is not left behind.
  const auto t3 = std::chrono::steady_clock::now();
  auto check = runtime::ModelSession::open(req.output_path);
  if (!check.ok()) {
    std::filesystem::remove(req.output_path, ec);
    return check.status().with_context("the compiled model does not load back (nothing written)");
  }
  r.check_s = since(t3);
  auto fm = format::read_model(req.output_path);
  if (!fm.ok()) return fm.status();
  r.weight_bytes = fm->weight_bytes;
  r.file_size = fm->file_size;
  r.total_s = since(t0);
  return r;
}

std::string format_compile_report(const CompileReport& r) {
  auto mib = [](uint64_t b) { return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1024.0 * 1024.0)); };
  std::string s = fmt::format("wrote {}\n", r.output_path);
  s += fmt::format("  nodes: {} -> {}\n", r.nodes_before, r.nodes_after);
  for (const auto& p : r.prepared.passes)
    if (p.changes) s += fmt::format("    {}: {} change(s)\n", p.pass, p.changes);
  if (!r.prepared.target.empty()) s += fmt::format("  target: {}\n", runtime::target_label(r.prepared));
  s += fmt::format("  weights: {} ({} bytes)\n", mib(r.weight_bytes), r.weight_bytes);
  s += fmt::format("  file: {} ({} bytes)\n", mib(r.file_size), r.file_size);
  if (!r.gears.empty()) s += fmt::format("  dynamic batch: {}\n", runtime::gears_to_string(r.gears));
  const passes::PrecisionReport& pr = r.prepared.precision;
  if (passes::is_low(pr.mode)) {
    s += fmt::format("  precision: {}: {} node(s) low, {} fp32, {} rounding node(s)\n",
                     runtime::describe_precision(pr.mode, "cpu"), pr.low_nodes, pr.fp32_nodes, pr.rounding_nodes);
    for (const std::string& e : pr.unmatched) s += fmt::format("  warning: keep-fp32 entry '{}' matches no node\n", e);
  }
  if (!r.dynamic_dims.empty()) s += fmt::format("  dynamic dims gears: {}\n", r.dynamic_dims);
  if (!r.input_ranges.empty()) s += fmt::format("  input ranges: {}\n", r.input_ranges);
  s += fmt::format("  time: {:.2f} s (import {:.2f}, optimize {:.2f}, write {:.2f}, load check {:.2f})\n", r.total_s,
                   r.import_s, r.optimize_s, r.write_s, r.check_s);
  return s;
}

nlohmann::json compile_report_to_json(const CompileReport& r) {
  const passes::PrecisionReport& pr = r.prepared.precision;
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& p : r.prepared.passes) passes.push_back({{"pass", p.pass}, {"changes", p.changes}});
  return {
      {"schema", "ferry.compile/1"},
      {"output", r.output_path},
      {"nodes_before", r.nodes_before},
      {"nodes_after", r.nodes_after},
      {"passes", passes},
      {"target", r.prepared.target},
      {"target_label", runtime::target_label(r.prepared)},
      {"host_nodes", r.prepared.host_nodes},
      {"precision",
       {{"mode", passes::to_string(pr.mode)},
        {"description", runtime::describe_precision(pr.mode, "cpu")},
        {"low_nodes", pr.low_nodes},
        {"fp32_nodes", pr.fp32_nodes},
        {"rounding_nodes", pr.rounding_nodes},
        {"kept_fp32", pr.kept},
        {"unmatched_keep_fp32", pr.unmatched}}},
      {"weight_bytes", r.weight_bytes},
      {"file_bytes", r.file_size},
      {"gears", r.gears},
      {"dynamic_dims", r.dynamic_dims},
      {"input_ranges", r.input_ranges},
      {"seconds",
       {{"total", r.total_s}, {"import", r.import_s}, {"optimize", r.optimize_s}, {"write", r.write_s},
        {"load_check", r.check_s}}},
  };
}

}  // namespace ferry::tools
