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
#include "tools/compare/repro.h"

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

namespace {

// What the steps of one comparison share, filled in as they go.
struct Comparison {
  explicit Comparison(const CompareOptions& opts) : o(opts) {}
  const CompareOptions& o;
  bool is_onnx = false;
  std::unique_ptr<ir::Model> original;                 // the model file as given (what dumps are named after)
  std::map<std::string, Origin> origin;                // of the original's tensors
  std::unique_ptr<runtime::ModelSession> cand_runner;  // null with --candidate DIR
  std::map<std::string, RtValue> feeds;
  CapturedRun cand;
  TensorMap golden;
  void progress(const std::string& s) const {
    if (o.progress) o.progress(s);
  }
};

// The report's header, from the flags alone.
CompareReport start_report(const CompareOptions& o) {
  CompareReport rep;
  rep.model = o.model;
  rep.golden = describe(o.golden);
  rep.thresholds = o.thresholds;
  rep.single_op = o.single_op;
  rep.layerwise = o.layerwise || o.single_op || !o.repro_dir.empty();
  rep.ranges = o.ranges;
  return rep;
}

// Opens the model as given (its tensor names and origins label every row) and the candidate: a session,
// or a folder of dumps that must exist.
Status open_models(Comparison& c, CompareReport& rep) {
  const CompareOptions& o = c.o;
  c.progress("loading " + o.model + " ...");
  c.is_onnx = runtime::detect_model_file(o.model) == runtime::ModelFileKind::kOnnx;
  if (!c.is_onnx && o.golden.kind == GoldenSpec::Kind::kReference && o.candidate_dir.empty())
    rep.notes.push_back("a .ferry file holds the compiled (already optimized) graph, so the reference golden runs that "
                        "graph; pass --golden MODEL.onnx to compare against the model as imported");
  frontend::ImportOptions import;
  import.allow_newer_opset = o.candidate.allow_newer_opset;
  FERRY_ASSIGN_OR_RETURN(c.original, runtime::open_model(o.model, import));
  c.origin = origins_of(*c.original->graph);

  if (o.candidate_dir.empty()) {
    runtime::SessionOptions so = o.candidate;
    so.input_shapes = o.inputs.shapes;
    FERRY_ASSIGN_OR_RETURN(c.cand_runner, runtime::ModelSession::open(o.model, so));
    rep.candidate = describe_candidate(*c.cand_runner, o.candidate);
  } else {
    std::error_code ec;
    if (!fs::is_directory(o.candidate_dir, ec))
      return Status::invalid("--candidate '" + o.candidate_dir + "' is not a folder");
    rep.candidate = "tensors in " + o.candidate_dir;
  }
  return Status();
}

// The inputs both sides run on: the flags', else those a folder of dumps was made with.
Status prepare_feeds(Comparison& c, CompareReport& rep) {
  const CompareOptions& o = c.o;
  const ir::Graph& in_graph = c.cand_runner ? c.cand_runner->graph() : *c.original->graph;
  InputOptions in = o.inputs;
  inputs_from_dir(in, in_graph, o.candidate_dir, rep.notes);
  if (o.golden.kind == GoldenSpec::Kind::kDir) inputs_from_dir(in, in_graph, o.golden.path, rep.notes);
  FERRY_ASSIGN_OR_RETURN(rep.inputs, prepare_inputs(in_graph, in));
  for (const PreparedInput& p : rep.inputs) c.feeds.emplace(p.name, RtValue(p.tensor));
  return Status();
}

// Runs the candidate session; its outputs count among its tensors, so layer rows can reach them.
Result<CapturedRun> run_candidate(const Comparison& c, const std::string& description, bool keep) {
  c.progress("running the candidate (" + description + ") ...");
  FERRY_ASSIGN_OR_RETURN(CapturedRun cand, run_capturing(*c.cand_runner, c.feeds, keep));
  for (const auto& [name, v] : cand.outputs)
    if (v.is_tensor()) cand.tensors[name] = v.tensor;
  return cand;
}

// A folder of dumps read as if the candidate had run: the tensors the model's nodes write, in graph order,
// and every output (a missing one is an error).
Result<CapturedRun> load_candidate_dir(const std::string& dir, const ir::Graph& g, std::vector<std::string>& notes) {
  CapturedRun cand;
  FERRY_ASSIGN_OR_RETURN(cand.tensors, load_dir(dir, all_names(g)));
  for (const ir::Value* v : g.inputs)
    if (!v->is_constant()) cand.order.push_back({v->name, "", "", {}, nullptr});
  for (const auto& n : g.nodes)
    for (const ir::Value* v : n->outputs)
      if (v && cand.tensors.count(v->name)) {
        const ir::Node& d = described_node(*n);
        cand.order.push_back({v->name, d.name, d.op_type, d.provenance, nullptr});
        cand.nonfinite[v->name] = count_nonfinite(cand.tensors.at(v->name));
      }
  for (const ir::Value* v : g.outputs) {
    auto it = cand.tensors.find(v->name);
    if (it == cand.tensors.end())
      return Status::invalid("--candidate " + dir + " has no file for the output '" + v->name + "' (" +
                             sanitize_name(v->name) + ".npy)");
    cand.outputs.emplace_back(v->name, RtValue(it->second));
  }
  if (cand.order.size() <= g.inputs.size())
    notes.push_back("--candidate " + dir + " holds no intermediate tensor of this model");
  return cand;
}

// ONNX Runtime as the golden: the inputs go to its script as an .npz in a temporary folder, which is
// removed whether or not the run worked.
Result<TensorMap> onnxruntime_golden(const Comparison& c, const std::vector<PreparedInput>& inputs,
                                     const std::vector<std::string>& names) {
  if (!c.is_onnx) return Status::invalid("--golden onnxruntime needs an ONNX model, not a compiled .ferry file");
  char tmpl[] = "/tmp/ferry_compare_XXXXXX";
  if (!::mkdtemp(tmpl)) return Status::io("cannot create a temporary folder for the ONNX Runtime golden");
  const fs::path tmp = tmpl;
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (const PreparedInput& p : inputs) arrays.emplace_back(p.name, p.tensor);
  Status st = write_npz((tmp / "inputs.npz").string(), arrays);
  c.progress("running the golden (ONNX Runtime) ...");
  if (st.ok()) st = run_onnxruntime_golden(c.o.model, (tmp / "inputs.npz").string(), (tmp / "golden").string());
  Result<TensorMap> loaded = st.ok() ? load_dir((tmp / "golden").string(), names) : Result<TensorMap>(st);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return loaded;
}

// The golden tensors, from whichever golden was asked for, under the original's and the candidate's names.
Result<TensorMap> golden_tensors(const Comparison& c, const CompareReport& rep, bool keep) {
  const CompareOptions& o = c.o;
  std::vector<std::string> names = all_names(*c.original->graph);
  for (const Seen& s : c.cand.order) names.push_back(s.onnx_name);
  switch (o.golden.kind) {
    case GoldenSpec::Kind::kReference:
    case GoldenSpec::Kind::kModel: {
      const std::string path = o.golden.kind == GoldenSpec::Kind::kModel ? o.golden.path : o.model;
      c.progress("running the golden (" + rep.golden + ") ...");
      // Keep the golden's intermediates also when the candidate went non-finite somewhere: the advisor
      // says how large the golden values there are.
      bool any_nonfinite = false;
      for (const auto& [n, cnt] : c.cand.nonfinite) any_nonfinite |= cnt.first + cnt.second > 0;
      return run_reference_golden(path, c.feeds, o.inputs.shapes, keep || any_nonfinite,
                                  o.candidate.backend_options.threads, o.candidate.allow_newer_opset);
    }
    case GoldenSpec::Kind::kOnnxRuntime:
      return onnxruntime_golden(c, rep.inputs, names);
    case GoldenSpec::Kind::kDir:
      return load_dir(o.golden.path, names);
  }
  return TensorMap();
}

// One row per tensor output, labelled with the ONNX node that produced it.
void output_rows(const Comparison& c, CompareReport& rep) {
  for (const auto& [name, v] : c.cand.outputs)
    if (!v.is_tensor()) rep.notes.push_back("output '" + name + "' is not a tensor; not compared");
  rep.outputs = compare_outputs(c.cand.outputs, c.golden, c.o.thresholds);
  for (Row& r : rep.outputs)
    if (auto it = c.origin.find(r.tensor); it != c.origin.end())
      r.onnx_node = it->second.node, r.op_type = it->second.op;
}

// A layer row for candidate value `s`, labelled with the ONNX node it stands for and the candidate node
// that computed it.
Row layer_row(const Comparison& c, const Seen& s, const Tensor& cand, const Tensor& gold) {
  Row r = make_row(s.onnx_name, cand, &gold, c.o.thresholds, false);
  if (auto it = c.origin.find(s.onnx_name); it != c.origin.end()) {
    r.onnx_node = it->second.node;
    r.op_type = it->second.op;
  } else if (!s.provenance.empty()) {
    r.onnx_node = s.provenance.back();
  }
  r.candidate_node = s.node;
  r.candidate_op = s.op;
  r.provenance = s.provenance;
  return r;
}

// Walks the candidate's values in execution order: notes those that went non-finite where the golden did
// not and, when layerwise, adds a row per value the golden also has. Returns the candidate's values by
// ONNX name (what --single-op re-runs from).
std::map<std::string, const ir::Value*> layer_rows(const Comparison& c, CompareReport& rep) {
  std::set<std::string> done;
  std::map<std::string, const ir::Value*> by_onnx;
  for (const Seen& s : c.cand.order) {
    if (s.node.empty() || !done.insert(s.onnx_name).second) continue;  // graph inputs; repeats
    if (s.value) by_onnx[s.onnx_name] = s.value;
    // Only tensors of the original model count (a pass's internal value that kept a name is not one).
    const bool known = !c.is_onnx || c.origin.count(s.onnx_name) || c.golden.count(s.onnx_name);
    auto nf = known ? c.cand.nonfinite.find(s.onnx_name) : c.cand.nonfinite.end();
    auto g = c.golden.find(s.onnx_name);
    if (nf != c.cand.nonfinite.end() && nf->second.first + nf->second.second > 0) {
      auto gnf = g == c.golden.end() ? std::pair<int64_t, int64_t>{0, 0} : count_nonfinite(g->second);
      if (nf->second.first > gnf.first || nf->second.second > gnf.second) rep.nonfinite_tensors.push_back(s.onnx_name);
    }
    if (!rep.layerwise) continue;
    if (g == c.golden.end()) {
      ++rep.layers_missing;
      continue;
    }
    auto t = c.cand.tensors.find(s.onnx_name);
    if (t == c.cand.tensors.end()) continue;
    rep.layers.push_back(layer_row(c, s, t->second, g->second));
  }
  return by_onnx;
}

// The first layer row that fails; with dumps, also the uncompared nodes that lead to it.
void find_first_divergence(const Comparison& c, CompareReport& rep) {
  for (size_t i = 0; i < rep.layers.size(); ++i)
    if (!rep.layers[i].pass()) {
      rep.first_divergent = i;
      break;
    }
  if (rep.first_divergent && !c.o.candidate_dir.empty())
    rep.divergence_span = divergence_span(*c.original->graph, rep.layers, *rep.first_divergent, c.cand.tensors);
}

// --single-op: re-runs each layer's candidate nodes on golden inputs, in the session these feeds pick.
Status single_op_rows(const Comparison& c, const std::map<std::string, const ir::Value*>& by_onnx,
                      CompareReport& rep) {
  FERRY_ASSIGN_OR_RETURN(size_t which, c.cand_runner->pick_session(c.feeds));
  c.progress(fmt::format("single-op: re-running {} unit(s) on golden inputs ...", rep.layers.size()));
  return run_single_op(c.cand_runner->session(which).model(), by_onnx, c.golden, c.o.candidate, c.o.thresholds,
                       rep.layers, [&](const std::string& s) { c.progress(s); });
}

// --ranges: the golden's value ranges in the original's node order, and the tensors fp16/bf16 would
// overflow or flush.
void range_rows(const Comparison& c, CompareReport& rep) {
  std::vector<std::pair<size_t, std::string>> order;
  for (const auto& [name, t] : c.golden) {
    auto it = c.origin.find(name);
    order.emplace_back(it == c.origin.end() ? 0 : it->second.order, name);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [pos, name] : order) {
    auto rr = range_of(name, c.golden.at(name));
    if (!rr) continue;
    if (auto it = c.origin.find(name); it != c.origin.end()) rr->onnx_node = it->second.node;
    if (rr->fp16_overflow > 0) rep.fp16_overflow.push_back(name);
    if (rr->fp16_underflow > 0.01) rep.fp16_underflow.push_back(name);
    if (rr->bf16_overflow > 0) rep.bf16_overflow.push_back(name);
    if (rr->bf16_underflow > 0.01) rep.bf16_underflow.push_back(name);
    rep.range_rows.push_back(std::move(*rr));
  }
}

// --repro: the bundle of the first divergent node, or a note saying there is none.
Status repro(const Comparison& c, CompareReport& rep) {
  if (!rep.first_divergent) {
    rep.notes.push_back("--repro " + c.o.repro_dir + ": nothing written, no tensor diverged");
    return Status();
  }
  if (!c.is_onnx) return Status::unsupported("--repro cuts the divergent node out of an .onnx model; this is a .ferry file");
  c.progress("writing the repro bundle to " + c.o.repro_dir + " ...");
  FERRY_ASSIGN_OR_RETURN(ReproBundle b, write_repro(c.o.model, *c.original->graph, rep.layers[*rep.first_divergent],
                                                    c.golden, c.o.candidate, c.o.repro_dir));
  rep.repro_dir = b.dir;
  rep.repro_command = b.command;
  return Status();
}

// What the advisor needs beyond the rows (how large the golden is where the candidate first went
// non-finite), the last note, then the advisor.
void finish_report(const Comparison& c, CompareReport& rep) {
  if (!rep.nonfinite_tensors.empty())
    if (auto g = c.golden.find(rep.nonfinite_tensors.front()); g != c.golden.end())
      if (auto rr = range_of(g->first, g->second)) rep.first_nonfinite_golden_absmax = rr->absmax;
  if (rep.layerwise && rep.layers_missing > 0)
    rep.notes.push_back(fmt::format("{} candidate tensor(s) have no golden counterpart and are not compared",
                                    rep.layers_missing));
  advise(rep);
}

}  // namespace

Result<CompareReport> run_compare(const CompareOptions& o) {
  CompareReport rep = start_report(o);
  // Intermediates are kept (deep copies) only when layer rows or ranges need them.
  const bool keep = rep.layerwise || o.ranges;
  if (o.single_op && !o.candidate_dir.empty())
    return Status::invalid("--single-op re-runs candidate nodes, which a --candidate folder of dumps cannot do");

  Comparison c(o);
  FERRY_RETURN_IF_ERROR(open_models(c, rep));
  FERRY_RETURN_IF_ERROR(prepare_feeds(c, rep));
  if (c.cand_runner) {
    FERRY_ASSIGN_OR_RETURN(c.cand, run_candidate(c, rep.candidate, keep));
  } else {
    FERRY_ASSIGN_OR_RETURN(c.cand, load_candidate_dir(o.candidate_dir, *c.original->graph, rep.notes));
  }
  FERRY_ASSIGN_OR_RETURN(c.golden, golden_tensors(c, rep, keep));

  output_rows(c, rep);
  const std::map<std::string, const ir::Value*> by_onnx = layer_rows(c, rep);
  find_first_divergence(c, rep);
  if (o.single_op && c.cand_runner) FERRY_RETURN_IF_ERROR(single_op_rows(c, by_onnx, rep));
  if (o.ranges) range_rows(c, rep);
  if (!o.repro_dir.empty()) FERRY_RETURN_IF_ERROR(repro(c, rep));
  finish_report(c, rep);
  return rep;
}

}  // namespace ferry::tools::compare
