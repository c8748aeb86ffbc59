#include "tools/model_loader.h"

#include "tools/dynamic_shapes.h"

#include "passes/pipeline.h"

namespace ferry::tools {

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

Status specialize_batch(ir::Model& model, int64_t batch, int opt_level) {
  for (ir::Value* v : model.graph->inputs) {
    if (v->is_constant()) continue;
    if (v->kind != ir::ValueKind::kTensor || !v->shape || v->shape->empty())
      return Status::invalid("input '" + v->name + "' has no batch dimension (dynamic batch needs every input to be a "
                             "tensor of rank 1 or more)");
    (*v->shape)[0] = Dim(batch);
  }
  passes::OptimizeOptions o;
  o.opt_level = opt_level;
  return passes::optimize(model, o).with_context("for batch size " + std::to_string(batch));
}

ModelRunner::~ModelRunner() = default;

const ir::Model& ModelRunner::model() const { return stored_ ? *stored_ : sessions_[0]->model(); }

std::vector<runtime::InputInfo> ModelRunner::inputs() const {
  if (!stored_) return sessions_[0]->inputs();
  std::vector<runtime::InputInfo> out;
  for (const ir::Value* v : stored_->graph->inputs)
    if (!v->is_constant()) out.push_back({v->name, v->dtype, v->shape});
  return out;
}

std::vector<runtime::InputInfo> ModelRunner::outputs() const {
  if (!stored_) return sessions_[0]->outputs();
  std::vector<runtime::InputInfo> out;
  for (const ir::Value* v : stored_->graph->outputs) out.push_back({v->name, v->dtype, v->shape});
  return out;
}

Result<size_t> ModelRunner::pick_session(const std::map<std::string, RtValue>& feeds) const {
  if (!ranges_.empty()) FERRY_RETURN_IF_ERROR(check_ranges(ranges_, feeds));
  if (!dims_gears_.empty()) return match_dims_gear(dims_positions_, dims_gears_, feeds);
  if (gears_.empty()) return size_t{0};
  int64_t batch = -1;
  std::string first;
  for (const runtime::InputInfo& in : inputs()) {
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

Result<std::vector<std::pair<std::string, RtValue>>> ModelRunner::run(const std::map<std::string, RtValue>& feeds) {
  FERRY_ASSIGN_OR_RETURN(size_t i, pick_session(feeds));
  return sessions_[i]->run(feeds);
}

Result<std::vector<std::pair<std::string, Tensor>>> ModelRunner::run_tensors(const std::map<std::string, Tensor>& feeds) {
  std::map<std::string, RtValue> values;
  for (const auto& [k, t] : feeds) values.emplace(k, RtValue(t));
  FERRY_ASSIGN_OR_RETURN(size_t i, pick_session(values));
  return sessions_[i]->run_tensors(feeds);
}

void ModelRunner::set_node_hook(runtime::NodeHook hook) {
  for (auto& s : sessions_) s->set_node_hook(hook);
}

Result<std::unique_ptr<ModelRunner>> open_session(const std::string& path, const runtime::SessionOptions& opts) {
  std::unique_ptr<ModelRunner> r(new ModelRunner());
  if (detect_model_file(path) == ModelFileKind::kOnnx) {
    FERRY_ASSIGN_OR_RETURN(auto s, runtime::Session::load(path, opts));
    r->sessions_.push_back(std::move(s));
    return r;
  }
  r->kind_ = ModelFileKind::kFerry;
  r->ferry_ = true;
  FERRY_ASSIGN_OR_RETURN(format::FerryModel fm, format::read_model(path));
  r->options_ = fm.options;
  // The graph is already optimized at the file's level, and its precision applied: the sessions do
  // neither again. Asking for another precision than the file's is an error, not a silent no-op.
  runtime::SessionOptions so = opts;
  so.opt_level = 0;
  if (passes::is_low(opts.precision.mode) && passes::to_string(opts.precision.mode) != fm.options.precision)
    return Status::invalid(path + " was compiled with precision " + fm.options.precision + "; --precision " +
                           passes::to_string(opts.precision.mode) + " applies when compiling (ferry compile --precision)");
  so.precision = passes::PrecisionOptions();
  so.target.clear();  // its placement and precision were decided when the file was compiled
  if (auto it = fm.model->metadata.find(kInputRangesKey); it != fm.model->metadata.end()) {
    auto ranges = ranges_from_string(it->second);
    if (!ranges.ok()) return ranges.status().with_context(path);
    r->ranges_ = *ranges;
  }
  if (auto it = fm.model->metadata.find(kDynamicDimsKey); it != fm.model->metadata.end()) {
    auto gears = parse_dynamic_dims(it->second);
    if (!gears.ok()) return gears.status().with_context(path + ": stored gears");
    r->dims_gears_ = *gears;
    r->dims_positions_ = dynamic_positions(*fm.model->graph);
    if (r->dims_positions_.size() != r->dims_gears_[0].size())
      return Status::invalid(path + ": stored --dynamic-dims gears do not match the graph's dynamic dims");
    // The gear fixes its inputs' shapes; `--shape` for them only picks the gear at run time (a shape that
    // fits no gear is reported by the run, naming the gears, not as a conflict at load).
    runtime::SessionOptions gear_opts = so;
    for (const auto& [name, dim] : r->dims_positions_) gear_opts.input_shapes.erase(name);
    for (const auto& gear : r->dims_gears_) {
      FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> m, format::reparse_model(fm));
      for (size_t i = 0; i < gear.size(); ++i) {
        ir::Value* v = m->graph->find_local_value(r->dims_positions_[i].first);
        (*v->shape)[r->dims_positions_[i].second] = Dim(gear[i]);
      }
      passes::OptimizeOptions o;
      o.opt_level = fm.options.opt_level;
      Status st = passes::optimize(*m, o);
      if (!st.ok()) return st.with_context(path + ": gear " + dims_gears_to_string({gear}));
      FERRY_ASSIGN_OR_RETURN(auto s, runtime::Session::from_model(std::move(m), gear_opts));
      r->sessions_.push_back(std::move(s));
    }
    r->stored_ = std::move(fm.model);
    return r;
  }
  if (fm.options.dynamic_batch.empty()) {
    FERRY_ASSIGN_OR_RETURN(auto s, runtime::Session::from_model(std::move(fm.model), so));
    r->sessions_.push_back(std::move(s));
    return r;
  }
  r->gears_ = fm.options.dynamic_batch;
  for (int64_t gear : r->gears_) {
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> m, format::reparse_model(fm));
    Status st = specialize_batch(*m, gear, fm.options.opt_level);
    if (!st.ok()) return st.with_context(path);
    // Shapes given at load (`--shape`) fix the other dynamic dims; dim 0 is the gear's, so a batch that
    // fits no gear is reported by the run (naming the gears), not as a shape conflict at load.
    runtime::SessionOptions gear_opts = so;
    for (auto& [name, dims] : gear_opts.input_shapes)
      if (!dims.empty()) dims[0] = gear;
    FERRY_ASSIGN_OR_RETURN(auto s, runtime::Session::from_model(std::move(m), gear_opts));
    r->sessions_.push_back(std::move(s));
  }
  r->stored_ = std::move(fm.model);
  return r;
}

}  // namespace ferry::tools
