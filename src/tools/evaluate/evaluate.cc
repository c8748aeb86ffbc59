#include "tools/evaluate/evaluate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/npy.h"
#include "frontend/onnx/import.h"
#include "tools/run_inputs.h"

namespace ferry::tools::evaluate {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Stacks per-sample tensors ([1, ...] each) into [B, ...]; rows past the samples repeat the last one.
Result<Tensor> stack(const std::vector<const Tensor*>& rows, int batch) {
  const Tensor& first = *rows.front();
  std::vector<int64_t> dims = first.dims();
  if (dims.empty()) return Status::invalid("a scalar input cannot be batched");
  dims[0] = batch;
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(first.dtype(), dims));
  const size_t row = first.nbytes();
  for (int i = 0; i < batch; ++i) {
    const Tensor& src = *rows[std::min<size_t>(i, rows.size() - 1)];
    if (src.dims() != first.dims())
      return Status::invalid("samples of one batch differ in shape (" + dims_to_string(src.dims()) + " vs " +
                             dims_to_string(first.dims()) + "): evaluate with --batch 1");
    std::memcpy(out.data<uint8_t>() + i * row, src.data<uint8_t>(), row);
  }
  return out;
}

// Row i of a [B, ...] output as [1, ...].
Result<Tensor> row_of(const Tensor& t, int i, int batch, const std::string& name) {
  if (batch == 1) return t;
  if (t.dims().empty() || t.dims()[0] != batch)
    return Status::invalid("output " + name + " is " + dims_to_string(t.dims()) + ", not batched along dim 0 as " +
                           std::to_string(batch) + ": evaluate this model with --batch 1");
  std::vector<int64_t> dims = t.dims();
  dims[0] = 1;
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(t.dtype(), dims));
  std::memcpy(out.data<uint8_t>(), t.data<uint8_t>() + i * out.nbytes(), out.nbytes());
  return out;
}

// The k largest classes of a one-row classifier output, best first (ties: lower index first).
std::vector<int64_t> top_classes(const Tensor& t, int k) {
  const int64_t n = t.numel();
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  k = static_cast<int>(std::min<int64_t>(k, n));
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = t.as_double(i);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
    if (std::isnan(v[a]) != std::isnan(v[b])) return std::isnan(v[b]);
    return v[a] > v[b] || (v[a] == v[b] && a < b);
  });
  idx.resize(k);
  return idx;
}

Result<OutputResult> judge_output(const std::string& name, const Tensor& g, const Tensor& t,
                                  const compare::Thresholds& th) {
  FERRY_ASSIGN_OR_RETURN(compare::Metrics m, compare::compute_metrics(g, t, th));
  OutputResult r{name, m.cosine, m.max_abs, m.max_rel, m.rel_euclid, m.pass};
  r.nonfinite = (m.candidate_nan + m.candidate_inf) > 0 && (m.golden_nan + m.golden_inf) == 0;
  if (compare::is_classifier_shape(g) && (g.dims().size() == 1 || g.dims()[0] == 1)) {
    auto gt = top_classes(g, 5), tt = top_classes(t, 5);
    r.golden_class = gt[0];
    r.target_class = tt[0];
    r.golden_top5 = gt;
    r.target_top5 = tt;
    if (g.numel() >= 5) r.top5_agree = std::find(tt.begin(), tt.end(), gt[0]) != tt.end();
  }
  return r;
}

}  // namespace

runtime::SessionOptions golden_options_for(const runtime::SessionOptions& target) {
  runtime::SessionOptions g;
  g.backend = "cpu";
  g.opt_level = 2;
  g.backend_options = target.backend_options;
  g.allow_newer_opset = target.allow_newer_opset;
  g.max_memory = target.max_memory;
  return g;
}

Result<std::unique_ptr<Evaluator>> Evaluator::open(const std::string& model, runtime::SessionOptions golden,
                                                   runtime::SessionOptions target, int batch,
                                                   const compare::Thresholds& th, const PreprocessSpec* in_model) {
  if (batch < 1) return Status::invalid("--batch must be 1 or more");
  auto e = std::unique_ptr<Evaluator>(new Evaluator());
  e->batch_ = batch;
  e->th_ = th;
  if (runtime::detect_model_file(model) == runtime::ModelFileKind::kFerry) {
    if (in_model)
      return Status::invalid(model + ": a compiled .ferry file; put the preprocessing in with `ferry compile "
                             "--preprocess` instead of --preprocess-in-model");
    // The file's gears (if any) are picked per batch; its stored precision must match the sessions'.
    FERRY_ASSIGN_OR_RETURN(e->golden_, runtime::ModelSession::open(model, golden));
    FERRY_ASSIGN_OR_RETURN(e->target_, runtime::ModelSession::open(model, target));
  } else {
    // The batch fixed in the graph: static shapes plan once (a symbolic batch re-infers shapes every run).
    golden.batch = target.batch = batch;
    frontend::ImportOptions imp;
    imp.allow_newer_opset = target.allow_newer_opset;
    FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> m, frontend::load_onnx(model, imp));
    if (in_model) FERRY_RETURN_IF_ERROR(insert_preprocess(*m, *in_model).with_context(model));
    FERRY_ASSIGN_OR_RETURN(e->golden_, runtime::ModelSession::from_model(m->clone(), golden));
    FERRY_ASSIGN_OR_RETURN(e->target_, runtime::ModelSession::from_model(std::move(m), target));
  }
  e->inputs_ = model_inputs(e->target_->inputs());
  if (e->inputs_.empty()) return Status::invalid(model + ": the model has no inputs to feed");
  for (const ModelInput& in : e->inputs_)
    if (!in.dims.empty() && in.dims[0] >= 0 && in.dims[0] != batch)
      return Status::invalid(model + ": input " + in.name + " has a fixed batch of " + std::to_string(in.dims[0]) +
                             (batch > 1 ? ", not --batch " + std::to_string(batch) : ", not 1"));
  return e;
}

std::string Evaluator::golden_label() const {
  return "fp32 on this CPU (" + golden_->session().options().backend + " backend)";
}

std::string Evaluator::target_label() const {
  const runtime::Session& s = target_->session();
  std::string t = s.target_label();
  return s.precision_description() + (t.empty() ? "" : "; " + t);
}

int Evaluator::chunk() const {
  // Inputs of up to 32 samples and 64 MiB: enough that each session's weights are read once per chunk
  // rather than once per batch (alternating two sessions batch by batch evicts each other's weights
  // from the cache), little enough to keep memory flat.
  int64_t sample_bytes = 0;
  for (const ModelInput& in : inputs_) {
    int64_t n = static_cast<int64_t>(dtype_size(in.dtype));
    for (size_t i = 1; i < in.dims.size(); ++i) n *= std::max<int64_t>(in.dims[i], 1);
    sample_bytes += n;
  }
  const int64_t by_memory = (int64_t{64} << 20) / std::max<int64_t>(sample_bytes, 1);
  const int64_t batches = std::max<int64_t>(1, std::min<int64_t>(32, by_memory) / batch_);
  return static_cast<int>(batches * batch_);
}

Result<std::vector<SampleResult>> Evaluator::evaluate(const std::vector<std::map<std::string, Tensor>>& samples) {
  if (samples.empty() || static_cast<int>(samples.size()) > chunk())
    return Status::invalid("evaluate: give 1 to " + std::to_string(chunk()) + " samples at a time");
  // The samples in batches, each stacked.
  std::vector<std::map<std::string, Tensor>> feeds;
  for (size_t first = 0; first < samples.size(); first += static_cast<size_t>(batch_)) {
    const size_t count = std::min(samples.size() - first, static_cast<size_t>(batch_));
    std::map<std::string, Tensor> f;
    for (const ModelInput& in : inputs_) {
      std::vector<const Tensor*> rows;
      for (size_t i = first; i < first + count; ++i) {
        auto it = samples[i].find(in.name);
        if (it == samples[i].end()) return Status::invalid("a sample lacks input '" + in.name + "'");
        rows.push_back(&it->second);
      }
      FERRY_ASSIGN_OR_RETURN(f[in.name], stack(rows, batch_));
    }
    feeds.push_back(std::move(f));
  }
  // Every batch on the golden, then every batch on the target.
  using Outputs = std::vector<std::pair<std::string, Tensor>>;
  auto run_all = [&](runtime::ModelSession& s, double& seconds) -> Result<std::vector<Outputs>> {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Outputs> all;
    for (auto& f : feeds) {
      FERRY_ASSIGN_OR_RETURN(Outputs o, s.run_tensors(f));
      all.push_back(std::move(o));
    }
    seconds += seconds_since(t0);
    return all;
  };
  FERRY_ASSIGN_OR_RETURN(std::vector<Outputs> golden, run_all(*golden_, golden_s_));
  FERRY_ASSIGN_OR_RETURN(std::vector<Outputs> target, run_all(*target_, target_s_));
  std::vector<SampleResult> out(samples.size());
  for (size_t b = 0; b < feeds.size(); ++b)
    for (size_t o = 0; o < golden[b].size() && o < target[b].size(); ++o) {
      const std::string& name = golden[b][o].first;
      for (size_t i = b * batch_; i < std::min(samples.size(), (b + 1) * static_cast<size_t>(batch_)); ++i) {
        const int row = static_cast<int>(i - b * batch_);
        FERRY_ASSIGN_OR_RETURN(Tensor g, row_of(golden[b][o].second, row, batch_, name));
        FERRY_ASSIGN_OR_RETURN(Tensor t, row_of(target[b][o].second, row, batch_, name));
        FERRY_ASSIGN_OR_RETURN(OutputResult r, judge_output(name, g, t, th_));
        out[i].outputs.push_back(std::move(r));
      }
    }
  return out;
}

void Evaluator::judge_label(SampleResult& r) {
  if (!r.label) return;
  for (auto& o : r.outputs) {
    if (!o.golden_class) continue;
    auto holds = [&](const std::vector<int64_t>& top) { return std::find(top.begin(), top.end(), *r.label) != top.end(); };
    r.golden_top1_correct = *o.golden_class == *r.label;
    r.target_top1_correct = *o.target_class == *r.label;
    r.golden_top5_correct = holds(o.golden_top5);
    r.target_top5_correct = holds(o.target_top5);
    return;
  }
}

}  // namespace ferry::tools::evaluate
