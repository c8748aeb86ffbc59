#include "tools/compile.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "format/ferry_file.h"
#include "frontend/onnx/import.h"
#include "tools/dynamic_shapes.h"
#include "tools/model_loader.h"

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
    ir::Value* v = g.find_local_value(name);
    if (!v || !v->is_graph_input || v->is_constant())
      return Status::invalid("--input-shape names '" + name + "', which is not a model input");
    if (v->shape && v->shape->size() != dims.size())
      return Status::invalid("--input-shape " + name + ":" + dims_to_string(dims) + " has rank " +
                             std::to_string(dims.size()) + " but '" + name + "' is " + v->type_string());
    if (dims.empty()) return Status::invalid("--input-shape " + name + ": a scalar has no batch dimension");
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
// model accepts goes into its metadata (tools/dynamic_shapes.h), which the loader enforces.
Status apply_dynamic_shapes(ir::Model& model, const CompileRequest& req, CompileReport& r) {
  if (req.input_ranges.empty() && req.dynamic_dims.empty()) return Status();
  if (!req.dynamic_batch.empty())
    return Status::invalid("--dynamic-batch cannot be combined with --dynamic-dims or --input-shape ranges");
  ir::Graph& g = *model.graph;
  for (const auto& [name, dims] : req.input_shapes) {
    ir::Value* v = g.find_local_value(name);
    if (!v || !v->is_graph_input) return Status::invalid("--input-shape names '" + name + "', which is not a model input");
    v->shape = to_shape(dims);
  }
  FERRY_RETURN_IF_ERROR(apply_ranges(g, req.input_ranges));
  if (!req.dynamic_dims.empty()) {
    auto pos = dynamic_positions(g);
    std::string where;
    for (const auto& [name, dim] : pos) where += (where.empty() ? "" : ", ") + name + " dim " + std::to_string(dim);
    if (pos.empty())
      return Status::invalid("--dynamic-dims: the model has no dynamic input dims (mark them -1 with --input-shape, "
                             "e.g. input:1,3,-1,-1)");
    if (pos.size() != req.dynamic_dims[0].size())
      return Status::invalid("--dynamic-dims: each gear gives " + std::to_string(req.dynamic_dims[0].size()) +
                             " value(s), but the model has " + std::to_string(pos.size()) + " dynamic input dim(s) (" +
                             where + ")");
    r.dynamic_dims = dims_gears_to_string(req.dynamic_dims);
    model.metadata[kDynamicDimsKey] = r.dynamic_dims;
  } else {
    InputRanges ranged;
    for (const auto& [name, dims] : req.input_ranges)
      for (const auto& d : dims)
        if (d.first != d.second) ranged[name] = dims;
    if (!ranged.empty()) {
      r.input_ranges = ranges_to_string(ranged);
      model.metadata[kInputRangesKey] = r.input_ranges;
    }
  }
  return Status();
}

}  // namespace

Result<std::pair<std::string, std::vector<int64_t>>> parse_input_shape(const std::string& arg) {
  size_t colon = arg.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Status::invalid("--input-shape '" + arg + "': expected NAME:DIMS, e.g. input:1,3,224,224");
  std::string name = arg.substr(0, colon);
  FERRY_ASSIGN_OR_RETURN(auto dims, parse_dims(arg.substr(colon + 1), "--input-shape " + name));
  return std::make_pair(name, dims);
}

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

Result<CompileReport> compile_model(const CompileRequest& req) {
  if (req.opt_level < 0 || req.opt_level > 3)
    return Status::invalid("--opt-level " + std::to_string(req.opt_level) + " is not 0..3");
  const auto t0 = std::chrono::steady_clock::now();
  CompileReport r;
  r.output_path = req.output_path;
  r.gears = req.dynamic_batch;
  frontend::ImportOptions import;
  import.allow_newer_opset = req.allow_newer_opset;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, frontend::load_onnx(req.model_path, import));
  r.import_s = since(t0);
  r.nodes_before = count_nodes(*model->graph);

  const auto t1 = std::chrono::steady_clock::now();
  passes::OptimizeOptions oo;
  oo.opt_level = req.opt_level;
  if (req.dynamic_batch.empty()) {
    oo.input_shapes = req.input_shapes;
  } else {
    FERRY_RETURN_IF_ERROR(make_batch_symbolic(*model, req.input_shapes).with_context(req.model_path));
  }
  FERRY_RETURN_IF_ERROR(apply_dynamic_shapes(*model, req, r).with_context(req.model_path));
  Status st = passes::optimize(*model, oo, &r.passes);
  if (!st.ok()) return st.with_context("while optimizing " + req.model_path);
  st = passes::apply_precision(*model, req.precision, &r.precision);
  if (!st.ok()) return st.with_context("while applying precision " + passes::to_string(req.precision.mode));
  r.optimize_s = since(t1);
  r.nodes_after = count_nodes(*model->graph);

  format::CompileOptions co;
  co.opt_level = req.opt_level;
  co.input_shapes = req.input_shapes;
  co.dynamic_batch = req.dynamic_batch;
  co.precision = passes::to_string(req.precision.mode);
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
  auto check = open_session(req.output_path);
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
  for (const auto& p : r.passes)
    if (p.changes) s += fmt::format("    {}: {} change(s)\n", p.pass, p.changes);
  s += fmt::format("  weights: {} ({} bytes)\n", mib(r.weight_bytes), r.weight_bytes);
  s += fmt::format("  file: {} ({} bytes)\n", mib(r.file_size), r.file_size);
  if (!r.gears.empty()) s += fmt::format("  dynamic batch: {}\n", gears_to_string(r.gears));
  if (passes::is_low(r.precision.mode)) {
    s += fmt::format("  precision: {}: {} node(s) low, {} fp32, {} rounding node(s)\n", passes::describe(r.precision.mode),
                     r.precision.low_nodes, r.precision.fp32_nodes, r.precision.rounding_nodes);
    for (const std::string& e : r.precision.unmatched) s += fmt::format("  warning: keep-fp32 entry '{}' matches no node\n", e);
  }
  if (!r.dynamic_dims.empty()) s += fmt::format("  dynamic dims gears: {}\n", r.dynamic_dims);
  if (!r.input_ranges.empty()) s += fmt::format("  input ranges: {}\n", r.input_ranges);
  s += fmt::format("  time: {:.2f} s (import {:.2f}, optimize {:.2f}, write {:.2f}, load check {:.2f})\n", r.total_s,
                   r.import_s, r.optimize_s, r.write_s, r.check_s);
  return s;
}

}  // namespace ferry::tools
