// run_compare: inputs → candidate (a capturing run, or dumped tensors) → golden → rows per output and
// per aligned tensor → first divergent node → single-op re-runs → ranges → advisor.
#include "tools/compare/compare.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/shape.h"
#include "tools/compare/compare_internal.h"

namespace ferry::tools::compare {

namespace fs = std::filesystem;

namespace {

struct Origin {
  std::string node, op;
  size_t order = 0;
};

// Which ONNX node produced each tensor of the model (and in what order). A .ferry file's graph is already
// optimized: its nodes are named by the ONNX nodes they stand for (provenance), and a node the precision
// pass inserted (RoundFloat) by the node whose output it rounds.
std::map<std::string, Origin> origins_of(const ir::Graph& g) {
  std::map<std::string, Origin> out;
  size_t i = 0;
  for (const auto& n : g.nodes) {
    ++i;
    for (const ir::Value* v : n->outputs)
      if (v) out[v->onnx_name.empty() ? v->name : v->onnx_name] = {onnx_node_of(*n), described_node(*n).op_type, i};
  }
  return out;
}

// When no input flag is given and a folder of dumps holds every input, the comparison must use the
// inputs the dumps were made with.
void inputs_from_dir(InputOptions& in, const ir::Graph& g, const std::string& dir, std::vector<std::string>& notes) {
  if (dir.empty() || !in.inputs_path.empty() || !in.files.empty()) return;
  std::error_code ec;
  for (const ir::Value* v : g.inputs)
    if (!v->is_constant() && !fs::is_regular_file(fs::path(dir) / (sanitize_name(v->name) + ".npy"), ec)) return;
  in.inputs_path = dir;
  notes.push_back("inputs read from " + dir + " (the inputs the dumps were made with)");
}

std::vector<std::string> all_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const ir::Value* v : g.inputs) names.push_back(v->onnx_name.empty() ? v->name : v->onnx_name);
  for (const auto& n : g.nodes)
    for (const ir::Value* v : n->outputs)
      if (v && !v->onnx_name.empty()) names.push_back(v->onnx_name);
  for (const ir::Value* v : g.outputs) names.push_back(v->name);
  return names;
}

Row make_row(const std::string& tensor, const Tensor& cand, const Tensor* gold, const Thresholds& th, bool classifier) {
  Row r;
  r.tensor = tensor;
  r.dtype = std::string(dtype_name(cand.dtype()));
  r.shape = cand.dims();
  if (!gold) {
    r.note = "no golden tensor";
    return r;
  }
  // Outputs whose length depends on values (Unique, NonZero, TopK on a computed k) can differ in shape
  // under another precision: that is a comparison result (the row fails), not an error.
  if (gold->dims() != cand.dims()) {
    r.note = "shape " + dims_to_string(gold->dims()) + " vs " + dims_to_string(cand.dims()) + " (golden vs candidate)";
    return r;
  }
  auto m = compute_metrics(*gold, cand, th, classifier);
  if (!m.ok()) r.note = m.status().message();
  else r.metrics = *m;
  return r;
}

}  // namespace

// What the candidate actually ran, from its session (a .ferry file's own target and precision, the
// target's default precision where none was asked for), never from the flags alone.
std::string describe_candidate(const runtime::ModelSession& runner, const runtime::SessionOptions& asked) {
  const runtime::Session& s = runner.session(0);
  const std::string target = s.target_label();
  const int level = runner.compile_options() ? runner.compile_options()->opt_level : asked.opt_level;
  return fmt::format("{}{} backend, opt level {}, precision {}", target.empty() ? "" : "target " + target + ", ",
                     asked.backend, level, s.precision_description());
}

Result<TensorMap> run_reference_golden(const std::string& model, const std::map<std::string, RtValue>& feeds,
                                       const std::map<std::string, std::vector<int64_t>>& input_shapes,
                                       bool keep_intermediates, int threads, bool allow_newer_opset) {
  runtime::SessionOptions so;
  so.allow_newer_opset = allow_newer_opset;
  so.backend = "reference";
  so.opt_level = 0;
  so.backend_options.threads = threads;
  so.input_shapes = input_shapes;
  FERRY_ASSIGN_OR_RETURN(auto runner, runtime::ModelSession::open(model, so));
  auto run = run_capturing(*runner, feeds, keep_intermediates);
  if (!run.ok()) return run.status().with_context("the golden " + model);
  TensorMap golden = std::move(run->tensors);
  for (const auto& [name, v] : run->outputs)
    if (v.is_tensor()) golden[name] = v.tensor;
  return golden;
}

std::vector<Row> compare_outputs(const std::vector<std::pair<std::string, RtValue>>& outputs, const TensorMap& golden,
                                 const Thresholds& th) {
  std::vector<Row> rows;
  for (const auto& [name, v] : outputs) {
    if (!v.is_tensor()) continue;
    auto g = golden.find(name);
    rows.push_back(make_row(name, v.tensor, g == golden.end() ? nullptr : &g->second, th, true));
  }
  return rows;
}

Result<CompareReport> run_compare(const CompareOptions& o) {
  auto progress = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  CompareReport rep;
  rep.model = o.model;
  rep.golden = describe(o.golden);
  rep.thresholds = o.thresholds;
  rep.single_op = o.single_op;
  rep.layerwise = o.layerwise || o.single_op;
  rep.ranges = o.ranges;
  const bool keep = rep.layerwise || o.ranges;
  if (o.single_op && !o.candidate_dir.empty())
    return Status::invalid("--single-op re-runs candidate nodes, which a --candidate folder of dumps cannot do");

  progress("loading " + o.model + " ...");
  const bool is_onnx = runtime::detect_model_file(o.model) == runtime::ModelFileKind::kOnnx;
  if (!is_onnx && o.golden.kind == GoldenSpec::Kind::kReference && o.candidate_dir.empty())
    rep.notes.push_back("a .ferry file holds the compiled (already optimized) graph, so the reference golden runs that "
                        "graph; pass --golden MODEL.onnx to compare against the model as imported");
  frontend::ImportOptions import;
  import.allow_newer_opset = o.candidate.allow_newer_opset;
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> original, runtime::open_model(o.model, import));
  const std::map<std::string, Origin> origin = origins_of(*original->graph);

  std::unique_ptr<runtime::ModelSession> cand_runner;
  if (o.candidate_dir.empty()) {
    runtime::SessionOptions so = o.candidate;
    so.input_shapes = o.inputs.shapes;
    FERRY_ASSIGN_OR_RETURN(cand_runner, runtime::ModelSession::open(o.model, so));
    rep.candidate = describe_candidate(*cand_runner, o.candidate);
  } else {
    std::error_code ec;
    if (!fs::is_directory(o.candidate_dir, ec))
      return Status::invalid("--candidate '" + o.candidate_dir + "' is not a folder");
    rep.candidate = "tensors in " + o.candidate_dir;
  }
  const ir::Graph& in_graph = cand_runner ? cand_runner->graph() : *original->graph;

  InputOptions in = o.inputs;
  inputs_from_dir(in, in_graph, o.candidate_dir, rep.notes);
  if (o.golden.kind == GoldenSpec::Kind::kDir) inputs_from_dir(in, in_graph, o.golden.path, rep.notes);
  FERRY_ASSIGN_OR_RETURN(rep.inputs, prepare_inputs(in_graph, in));
  std::map<std::string, RtValue> feeds;
  for (const PreparedInput& p : rep.inputs) feeds.emplace(p.name, RtValue(p.tensor));

  // --- candidate
  CapturedRun cand;
  if (cand_runner) {
    progress("running the candidate (" + rep.candidate + ") ...");
    FERRY_ASSIGN_OR_RETURN(cand, run_capturing(*cand_runner, feeds, keep));
    for (const auto& [name, v] : cand.outputs)
      if (v.is_tensor()) cand.tensors[name] = v.tensor;
  } else {
    FERRY_ASSIGN_OR_RETURN(cand.tensors, load_dir(o.candidate_dir, all_names(*original->graph)));
    for (const ir::Value* v : original->graph->inputs)
      if (!v->is_constant()) cand.order.push_back({v->name, "", "", {}, nullptr});
    for (const auto& n : original->graph->nodes)
      for (const ir::Value* v : n->outputs)
        if (v && cand.tensors.count(v->name)) {
          const ir::Node& d = described_node(*n);
          cand.order.push_back({v->name, d.name, d.op_type, d.provenance, nullptr});
          cand.nonfinite[v->name] = count_nonfinite(cand.tensors.at(v->name));
        }
    for (const ir::Value* v : original->graph->outputs) {
      auto it = cand.tensors.find(v->name);
      if (it == cand.tensors.end())
        return Status::invalid("--candidate " + o.candidate_dir + " has no file for the output '" + v->name + "' (" +
                               sanitize_name(v->name) + ".npy)");
      cand.outputs.emplace_back(v->name, RtValue(it->second));
    }
    if (cand.order.size() <= original->graph->inputs.size())
      rep.notes.push_back("--candidate " + o.candidate_dir + " holds no intermediate tensor of this model");
  }

  // --- golden
  TensorMap golden;
  std::vector<std::string> names = all_names(*original->graph);
  for (const Seen& s : cand.order) names.push_back(s.onnx_name);
  switch (o.golden.kind) {
    case GoldenSpec::Kind::kReference:
    case GoldenSpec::Kind::kModel: {
      const std::string path = o.golden.kind == GoldenSpec::Kind::kModel ? o.golden.path : o.model;
      progress("running the golden (" + rep.golden + ") ...");
      // Keep the golden's intermediates also when the candidate went non-finite somewhere: the advisor
      // says how large the golden values there are.
      bool any_nonfinite = false;
      for (const auto& [n, c] : cand.nonfinite) any_nonfinite |= c.first + c.second > 0;
      FERRY_ASSIGN_OR_RETURN(golden, run_reference_golden(path, feeds, o.inputs.shapes, keep || any_nonfinite,
                                                          o.candidate.backend_options.threads, o.candidate.allow_newer_opset));
      break;
    }
    case GoldenSpec::Kind::kOnnxRuntime: {
      if (!is_onnx) return Status::invalid("--golden onnxruntime needs an ONNX model, not a compiled .ferry file");
      char tmpl[] = "/tmp/ferry_compare_XXXXXX";
      if (!::mkdtemp(tmpl)) return Status::io("cannot create a temporary folder for the ONNX Runtime golden");
      const fs::path tmp = tmpl;
      std::vector<std::pair<std::string, Tensor>> arrays;
      for (const PreparedInput& p : rep.inputs) arrays.emplace_back(p.name, p.tensor);
      Status st = write_npz((tmp / "inputs.npz").string(), arrays);
      progress("running the golden (ONNX Runtime) ...");
      if (st.ok()) st = run_onnxruntime_golden(o.model, (tmp / "inputs.npz").string(), (tmp / "golden").string());
      Result<TensorMap> loaded = st.ok() ? load_dir((tmp / "golden").string(), names) : Result<TensorMap>(st);
      std::error_code ec;
      fs::remove_all(tmp, ec);
      if (!loaded.ok()) return loaded.status();
      golden = std::move(loaded).value();
      break;
    }
    case GoldenSpec::Kind::kDir: {
      FERRY_ASSIGN_OR_RETURN(golden, load_dir(o.golden.path, names));
      break;
    }
  }

  // --- outputs
  for (const auto& [name, v] : cand.outputs)
    if (!v.is_tensor()) rep.notes.push_back("output '" + name + "' is not a tensor; not compared");
  rep.outputs = compare_outputs(cand.outputs, golden, o.thresholds);
  for (Row& r : rep.outputs)
    if (auto it = origin.find(r.tensor); it != origin.end()) r.onnx_node = it->second.node, r.op_type = it->second.op;

  // --- layers, in candidate order
  std::set<std::string> done;
  std::map<std::string, const ir::Value*> by_onnx;
  for (const Seen& s : cand.order) {
    if (s.node.empty() || !done.insert(s.onnx_name).second) continue;  // graph inputs; repeats
    if (s.value) by_onnx[s.onnx_name] = s.value;
    // Only tensors of the original model count (a pass's internal value that kept a name is not one).
    const bool known = !is_onnx || origin.count(s.onnx_name) || golden.count(s.onnx_name);
    auto nf = known ? cand.nonfinite.find(s.onnx_name) : cand.nonfinite.end();
    auto g = golden.find(s.onnx_name);
    if (nf != cand.nonfinite.end() && nf->second.first + nf->second.second > 0) {
      auto gnf = g == golden.end() ? std::pair<int64_t, int64_t>{0, 0} : count_nonfinite(g->second);
      if (nf->second.first > gnf.first || nf->second.second > gnf.second) rep.nonfinite_tensors.push_back(s.onnx_name);
    }
    if (!rep.layerwise) continue;
    if (g == golden.end()) {
      ++rep.layers_missing;
      continue;
    }
    auto c = cand.tensors.find(s.onnx_name);
    if (c == cand.tensors.end()) continue;
    Row r = make_row(s.onnx_name, c->second, &g->second, o.thresholds, false);
    if (auto it = origin.find(s.onnx_name); it != origin.end()) {
      r.onnx_node = it->second.node;
      r.op_type = it->second.op;
    } else if (!s.provenance.empty()) {
      r.onnx_node = s.provenance.back();
    }
    r.candidate_node = s.node;
    r.candidate_op = s.op;
    r.provenance = s.provenance;
    rep.layers.push_back(std::move(r));
  }
  for (size_t i = 0; i < rep.layers.size(); ++i)
    if (!rep.layers[i].pass()) {
      rep.first_divergent = i;
      break;
    }
  if (rep.first_divergent && !o.candidate_dir.empty())
    rep.divergence_span = divergence_span(*original->graph, rep.layers, *rep.first_divergent, cand.tensors);

  if (o.single_op && cand_runner) {
    FERRY_ASSIGN_OR_RETURN(size_t which, cand_runner->pick_session(feeds));
    progress(fmt::format("single-op: re-running {} unit(s) on golden inputs ...", rep.layers.size()));
    FERRY_RETURN_IF_ERROR(run_single_op(cand_runner->session(which).model(), by_onnx, golden, o.candidate,
                                        o.thresholds, rep.layers, progress));
  }

  if (o.ranges) {
    std::vector<std::pair<size_t, std::string>> order;
    for (const auto& [name, t] : golden) {
      auto it = origin.find(name);
      order.emplace_back(it == origin.end() ? 0 : it->second.order, name);
    }
    std::sort(order.begin(), order.end());
    for (const auto& [pos, name] : order) {
      auto rr = range_of(name, golden.at(name));
      if (!rr) continue;
      if (auto it = origin.find(name); it != origin.end()) rr->onnx_node = it->second.node;
      if (rr->fp16_overflow > 0) rep.fp16_overflow.push_back(name);
      if (rr->fp16_underflow > 0.01) rep.fp16_underflow.push_back(name);
      if (rr->bf16_overflow > 0) rep.bf16_overflow.push_back(name);
      if (rr->bf16_underflow > 0.01) rep.bf16_underflow.push_back(name);
      rep.range_rows.push_back(std::move(*rr));
    }
  }
  if (!rep.nonfinite_tensors.empty())
    if (auto g = golden.find(rep.nonfinite_tensors.front()); g != golden.end())
      if (auto rr = range_of(g->first, g->second)) rep.first_nonfinite_golden_absmax = rr->absmax;
  if (rep.layerwise && rep.layers_missing > 0)
    rep.notes.push_back(fmt::format("{} candidate tensor(s) have no golden counterpart and are not compared",
                                    rep.layers_missing));
  advise(rep);
  return rep;
}

}  // namespace ferry::tools::compare
