#include "runtime/model_session.h"

#include <sstream>

#include "targets/target.h"

namespace ferry::runtime {

std::string gears_to_string(const std::vector<int64_t>& gears) {
  std::string s;
  for (int64_t g : gears) s += (s.empty() ? "" : ", ") + std::to_string(g);
  return s;
}

ModelFileKind detect_model_file(const std::string& path) {
  return format::is_ferry_file(path) ? ModelFileKind::kFerry : ModelFileKind::kOnnx;
}

Result<std::unique_ptr<ir::Model>> open_model(const std::string& path, const frontend::ImportOptions& import) {
  if (detect_model_file(path) == ModelFileKind::kFerry) {
    FERRY_ASSIGN_OR_RETURN(format::FerryModel m, format::read_model(path));
    return std::move(m.model);
  }
  return frontend::load_onnx(path, import);
}

namespace {

// How a compiled file was prepared, as its compile options and metadata say: the target (with the nodes
// it placed on the host) and the precision, so reports on the file say what runs.
PrepareReport file_report(const format::FerryModel& fm) {
  PrepareReport r;
  r.target = fm.options.target;
  if (!r.target.empty())
    if (auto t = targets::load_target(r.target); t.ok()) r.emulated = t->emulated;
  if (auto m = passes::parse_precision(fm.options.precision); m.ok()) r.precision.mode = *m;
  if (auto it = fm.model->metadata.find(kHostNodesKey); it != fm.model->metadata.end()) {
    std::istringstream in(it->second);
    std::string line;
    while (std::getline(in, line)) {
      const size_t tab = line.find('\t');
      targets::NodePlacement p;
      p.placement = targets::Placement::kHost;
      const size_t tab2 = tab == std::string::npos ? tab : line.find('\t', tab + 1);
      if (tab2 != std::string::npos) p.reason = line.substr(tab2 + 1);
      r.placement.emplace_back(line.substr(0, tab), p);
      ++r.host_nodes;
    }
  }
  return r;
}

// The run's cpu options where it gave them, the file's (as compiled) where the run left them auto.
backends::CpuOptions merge_cpu_options(backends::CpuOptions run, const std::string& stored) {
  auto file = backends::parse_cpu_options(stored);
  if (!file.ok()) return run;
  if (run.gemm == backends::CpuGemm::kAuto) run.gemm = file->gemm;
  for (auto [r, f] : {std::pair{&run.bf16, file->bf16}, {&run.winograd, file->winograd},
                      {&run.blocked_1x1, file->blocked_1x1}, {&run.own_depthwise, file->own_depthwise}})
    if (*r == backends::Choice::kAuto) *r = f;
  return run;
}

// A .ferry file's target and precision were decided when it was compiled: asking for others is an
// error that says how to get them, never a silent run of something else under the asked-for label.
Status check_against_file(const std::string& path, const format::CompileOptions& co, const SessionOptions& opts) {
  if (!opts.target.empty() && opts.target != co.target)
    return Status::invalid(path + " was compiled " + (co.target.empty() ? "without a target" : "for target " + co.target) +
                           "; --target " + opts.target + " applies when compiling (ferry compile --target " +
                           opts.target + "), or run the .onnx with --target");
  if (opts.precision_given && passes::to_string(opts.precision.mode) != co.precision)
    return Status::invalid(path + " was compiled with precision " + co.precision + "; --precision " +
                           passes::to_string(opts.precision.mode) + " applies when compiling (ferry compile --precision)");
  return Status();
}

}  // namespace

ModelSession::~ModelSession() = default;

const ir::Model& ModelSession::model() const { return stored_ ? *stored_ : sessions_[0]->model(); }

std::vector<InputInfo> ModelSession::inputs() const {
  if (!stored_) return sessions_[0]->inputs();
  std::vector<InputInfo> out;
  for (const ir::Value* v : stored_->graph->inputs)
    if (!v->is_constant()) out.push_back({v->name, v->dtype, v->shape});
  return out;
}

std::vector<InputInfo> ModelSession::outputs() const {
  if (!stored_) return sessions_[0]->outputs();
  std::vector<InputInfo> out;
  for (const ir::Value* v : stored_->graph->outputs) out.push_back({v->name, v->dtype, v->shape});
  return out;
}

Result<size_t> ModelSession::pick_session(const std::map<std::string, RtValue>& feeds) const {
  if (!ranges_.empty()) FERRY_RETURN_IF_ERROR(check_ranges(ranges_, feeds));
  if (!dims_gears_.empty()) return match_dims_gear(dims_positions_, dims_gears_, feeds);
  if (gears_.empty()) return size_t{0};
  int64_t batch = -1;
  std::string first;
  for (const InputInfo& in : inputs()) {
    auto it = feeds.find(in.name);
    if (it == feeds.end() || !it->second.is_tensor()) continue;  // the session reports it
    const Tensor& t = it->second.tensor;
    if (t.rank() == 0)
      return Status::invalid("input '" + in.name + "' is a scalar, but this model was compiled for batch sizes " +
                             gears_to_string(gears_) + " (dimension 0 of every input)");
    if (batch < 0) {
      batch = t.dim(0);
      first = in.name;
    } else if (t.dim(0) != batch) {
      return Status::invalid("input '" + in.name + "' has batch " + std::to_string(t.dim(0)) + " but input '" + first +
                             "' has batch " + std::to_string(batch) + "; dimension 0 is the batch of every input");
    }
  }
  if (batch < 0) return size_t{0};
  for (size_t i = 0; i < gears_.size(); ++i)
    if (gears_[i] == batch) return i;
  return Status::invalid("input '" + first + "' has batch " + std::to_string(batch) +
                         "; this model was compiled for batch sizes " + gears_to_string(gears_));
}

Result<std::vector<std::pair<std::string, RtValue>>> ModelSession::run(const std::map<std::string, RtValue>& feeds) {
  FERRY_ASSIGN_OR_RETURN(size_t i, pick_session(feeds));
  return sessions_[i]->run(feeds);
}

Result<std::vector<std::pair<std::string, Tensor>>> ModelSession::run_tensors(const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, RtValue> values;
  for (const auto& [k, t] : feeds) values.emplace(k, RtValue(t));
  FERRY_ASSIGN_OR_RETURN(size_t i, pick_session(values));
  return sessions_[i]->run_tensors(feeds);
}

void ModelSession::set_node_hook(NodeHook hook, HookMode mode) {
  for (auto& s : sessions_) s->set_node_hook(hook, mode);
}

Result<std::unique_ptr<ModelSession>> ModelSession::from_model(std::unique_ptr<ir::Model> model,
                                                               const SessionOptions& opts) {
  std::unique_ptr<ModelSession> r(new ModelSession());
  FERRY_ASSIGN_OR_RETURN(auto s, Session::from_model(std::move(model), opts));
  r->sessions_.push_back(std::move(s));
  return r;
}

Result<std::unique_ptr<ModelSession>> ModelSession::open(const std::string& path, const SessionOptions& opts) {
  if (detect_model_file(path) == ModelFileKind::kOnnx) {
    frontend::ImportOptions imp;
    imp.allow_newer_opset = opts.allow_newer_opset;
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, frontend::load_onnx(path, imp));
    return from_model(std::move(model), opts);
  }
  std::unique_ptr<ModelSession> r(new ModelSession());
  FERRY_RETURN_IF_ERROR(r->open_ferry(path, opts));
  return r;
}

Status ModelSession::open_ferry(const std::string& path, const SessionOptions& opts) {
  kind_ = ModelFileKind::kFerry;
  ferry_ = true;
  FERRY_ASSIGN_OR_RETURN(format::FerryModel fm, format::read_model(path));
  options_ = fm.options;
  FERRY_RETURN_IF_ERROR(check_against_file(path, fm.options, opts));
  const PrepareReport stored_report = file_report(fm);
  SessionOptions so = opts;
  so.backend_options.cpu = merge_cpu_options(opts.backend_options.cpu, fm.options.cpu_options);
  // The graph was optimized and its precision applied when compiled: a gear (or --shape) only fixes
  // shapes and folds again at the file's level, never changes precision or placement.
  auto prepare_stored = [&](std::unique_ptr<ir::Model> m, PrepareOptions po) -> Result<std::unique_ptr<Session>> {
    PrepareReport rep;
    FERRY_RETURN_IF_ERROR(prepare(*m, po, &rep));
    PrepareReport merged = stored_report;
    merged.passes = std::move(rep.passes);
    return Session::from_prepared(std::move(m), so, std::move(merged));
  };
  if (auto it = fm.model->metadata.find(kInputRangesKey); it != fm.model->metadata.end()) {
    auto ranges = ranges_from_string(it->second);
    if (!ranges.ok()) return ranges.status().with_context(path);
    ranges_ = *ranges;
  }
  if (auto it = fm.model->metadata.find(kDynamicDimsKey); it != fm.model->metadata.end()) {
    auto gears = parse_dynamic_dims(it->second);
    if (!gears.ok()) return gears.status().with_context(path + ": stored gears");
    dims_gears_ = *gears;
    dims_positions_ = dynamic_positions(*fm.model->graph);
    if (dims_positions_.size() != dims_gears_[0].size())
      return Status::invalid(path + ": stored --dynamic-dims gears do not match the graph's dynamic dims");
    for (const auto& gear : dims_gears_) {
      FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> m, format::reparse_model(fm));
      // The gear fixes its inputs' shapes; `--shape` for them only picks the gear at run time.
      PrepareOptions po;
      po.opt_level = fm.options.opt_level;
      for (size_t i = 0; i < gear.size(); ++i) {
        ir::Value* v = m->graph->find_local_value(dims_positions_[i].first);
        std::vector<int64_t>& dims = po.input_shapes[v->name];
        if (dims.empty())
          for (const Dim& d : *v->shape) dims.push_back(d.is_static() ? d.value : 0);
        dims[dims_positions_[i].second] = gear[i];
      }
      auto s = prepare_stored(std::move(m), po);
      if (!s.ok()) return s.status().with_context(path + ": gear " + dims_gears_to_string({gear}));
      sessions_.push_back(std::move(*s));
    }
    stored_ = std::move(fm.model);
    return Status();
  }
  if (fm.options.dynamic_batch.empty()) {
    PrepareOptions po;
    po.input_shapes = opts.input_shapes;
    FERRY_ASSIGN_OR_RETURN(auto s, prepare_stored(std::move(fm.model), po));
    sessions_.push_back(std::move(s));
    return Status();
  }
  gears_ = fm.options.dynamic_batch;
  for (int64_t gear : gears_) {
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> m, format::reparse_model(fm));
    // Shapes given at load (`--shape`) fix the other dynamic dims; dim 0 is the gear's, so a batch that
    // fits no gear is reported by the run (naming the gears), not as a shape conflict at load.
    PrepareOptions po;
    po.opt_level = fm.options.opt_level;
    po.batch = gear;
    po.input_shapes = opts.input_shapes;
    for (auto& [name, dims] : po.input_shapes)
      if (!dims.empty()) dims[0] = gear;
    auto s = prepare_stored(std::move(m), po);
    if (!s.ok()) return s.status().with_context(path + ": batch size " + std::to_string(gear));
    sessions_.push_back(std::move(*s));
  }
  stored_ = std::move(fm.model);
  return Status();
}

}  // namespace ferry::runtime
