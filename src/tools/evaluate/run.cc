// run_evaluate: the streaming loop. Worker threads decode and preprocess samples ahead of the sessions (at
// most a window of them, so memory stays flat whatever the data set's size) and hand them over in data-set
// order; each batch runs on the golden and the target; results stream to samples.jsonl and into the
// Aggregate. Only the inputs of the current worst cases are held, to be saved for replay at the end.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/npy.h"
#include "tools/compare/repro.h"
#include "tools/evaluate/evaluate.h"
#include "tools/run_inputs.h"

namespace ferry::tools::evaluate {

namespace fs = std::filesystem;

namespace {

using Feeds = std::map<std::string, Tensor>;

class Prefetcher {
 public:
  Prefetcher(const std::vector<SampleRef>& samples, const std::vector<ModelInput>& inputs, const PreprocessSpec* pre,
             int workers, size_t window)
      : samples_(samples), inputs_(inputs), pre_(pre), window_(window) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  // Sample i's feeds (or its error), waiting for it when the workers are behind.
  Result<Feeds> take(size_t i) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return done_.count(i) != 0; });
    Result<Feeds> r = std::move(done_.at(i));
    done_.erase(i);
    consumed_ = i + 1;
    cv_.notify_all();
    return r;
  }
  double work_seconds() {
    std::lock_guard<std::mutex> l(mu_);
    return work_s_;
  }

 private:
  void work() {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || next_ >= samples_.size() || next_ < consumed_ + window_; });
        if (stop_ || next_ >= samples_.size()) return;
        i = next_++;
      }
      auto t0 = std::chrono::steady_clock::now();
      Result<Feeds> r = load_sample(samples_[i], inputs_, pre_);
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      {
        std::lock_guard<std::mutex> l(mu_);
        done_.emplace(i, std::move(r));
        work_s_ += dt;
      }
      cv_.notify_all();
    }
  }

  const std::vector<SampleRef>& samples_;
  const std::vector<ModelInput>& inputs_;
  const PreprocessSpec* pre_;
  const size_t window_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, Result<Feeds>> done_;
  size_t next_ = 0, consumed_ = 0;
  bool stop_ = false;
  double work_s_ = 0;
  std::vector<std::thread> threads_;
};

Status check_options(const EvaluateOptions& o) {
  if (o.out_dir.empty()) return Status::invalid("evaluate: -o DIR is required (the report goes there)");
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count)
    return Status::invalid("--shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) +
                           ": want i/N with 0 <= i < N");
  if (o.worst < 0) return Status::invalid("--worst must be 0 or more");
  return Status();
}

// A file in `dir` that is not a link (so a planted symlink cannot redirect the write).
Result<std::string> output_file(const std::string& dir, const std::string& name) {
  fs::path p = fs::path(dir) / name;
  std::error_code ec;
  if (fs::is_symlink(p, ec)) return Status::invalid(p.string() + " is a symbolic link: refusing to write through it");
  return p.string();
}

}  // namespace

Result<std::unique_ptr<Evaluation>> Evaluation::start(const EvaluateOptions& o, const std::string& data_description,
                                                     int64_t dataset_samples) {
  FERRY_RETURN_IF_ERROR(check_options(o));
  auto e = std::unique_ptr<Evaluation>(new Evaluation());
  if (!o.preprocess.empty()) {
    FERRY_ASSIGN_OR_RETURN(e->pre_, parse_preprocess(o.preprocess));
  }
  if (o.preprocess_in_model && !e->pre_)
    return Status::invalid("--preprocess-in-model needs --preprocess SPEC (what to put in the model)");
  const auto t0 = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(e->evaluator_, Evaluator::open(o.model, o.golden, o.target, o.batch, o.thresholds,
                                                        o.preprocess_in_model ? &*e->pre_ : nullptr));
  e->rep_.timing.open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EvaluateReport& rep = e->rep_;
  rep.model = o.model;
  rep.data = data_description;
  rep.labels = o.labels;
  rep.preprocess = e->pre_ ? describe(*e->pre_) : "";
  if (o.preprocess_in_model) rep.notes.push_back("the preprocessing's per-pixel part ran inside the model (uint8 NHWC input)");
  rep.golden = e->evaluator_->golden_label();
  rep.target = e->evaluator_->target_label();
  rep.target_flags = compare::session_flags_text(o.target, o.target.precision.keep_fp32_file);
  rep.batch = o.batch;
  rep.workers = o.workers > 0 ? o.workers : 2;
  rep.shard_index = o.shard_index;
  rep.shard_count = o.shard_count;
  rep.dataset_samples = dataset_samples;
  rep.aggregate = Aggregate(o.worst);
  rep.out_dir = o.out_dir;
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::io("cannot create " + o.out_dir + ": " + ec.message());
  FERRY_ASSIGN_OR_RETURN(rep.samples_file, output_file(o.out_dir, "samples.jsonl"));
  e->jsonl_.open(rep.samples_file, std::ios::trunc);
  if (!e->jsonl_) return Status::io("cannot write " + rep.samples_file);
  return e;
}

Status Evaluation::record(const SampleResult& r, Feeds* feeds) {
  if (feeds && rep_.aggregate.would_keep(r)) kept_[r.id] = std::move(*feeds);
  rep_.aggregate.add(r);
  jsonl_ << to_json(r).dump() << '\n';
  if (!jsonl_) return Status::io("cannot write " + rep_.samples_file);
  // Inputs of samples pushed out of the worst list are dropped.
  if (kept_.size() > rep_.aggregate.worst().size()) {
    std::set<std::string> worst_ids;
    for (auto& s : rep_.aggregate.worst()) worst_ids.insert(s.id);
    for (auto it = kept_.begin(); it != kept_.end();) it = worst_ids.count(it->first) ? std::next(it) : kept_.erase(it);
  }
  return Status();
}

Result<std::vector<SampleResult>> Evaluation::run(std::vector<Feeds> feeds, const std::vector<SampleRef>& refs,
                                                  const std::vector<int64_t>& indices) {
  if (refs.size() != feeds.size() || indices.size() != feeds.size())
    return Status::invalid("evaluate: one id and index per sample");
  FERRY_ASSIGN_OR_RETURN(std::vector<SampleResult> results, evaluator_->evaluate(feeds));
  for (size_t k = 0; k < results.size(); ++k) {
    SampleResult& r = results[k];
    r.index = indices[k];
    r.id = refs[k].id;
    r.path = refs[k].path;
    r.label = refs[k].label;
    Evaluator::judge_label(r);
    FERRY_RETURN_IF_ERROR(record(r, &feeds[k]));
  }
  rep_.timing.golden_s = evaluator_->golden_seconds();
  rep_.timing.target_s = evaluator_->target_seconds();
  return results;
}

Status Evaluation::add_result(const SampleResult& r) { return record(r, nullptr); }

Result<EvaluateReport> Evaluation::finish() {
  jsonl_.close();
  if (!jsonl_) return Status::io("cannot write " + rep_.samples_file);
  if (rep_.aggregate.worst().empty()) return rep_;
  const std::string dir = (fs::path(rep_.out_dir) / "worst").string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io("cannot create " + dir + ": " + ec.message());
  int k = 0;
  for (SampleResult& s : rep_.aggregate.worst()) {
    Feeds feeds;
    if (auto it = kept_.find(s.id); it != kept_.end()) {
      feeds = it->second;
    } else if (!s.path.empty()) {
      // Computed elsewhere (a Ray actor): decoded again here, the same way.
      FERRY_ASSIGN_OR_RETURN(SampleRef ref, sample_ref(s.id, s.path, s.label));
      FERRY_ASSIGN_OR_RETURN(feeds, load_sample(ref, inputs(), pre_ ? &*pre_ : nullptr));
    } else {
      continue;
    }
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%03d_", k++);
    FERRY_ASSIGN_OR_RETURN(std::string path, output_file(dir, prefix + sanitize_name(s.id) + ".npz"));
    std::vector<std::pair<std::string, Tensor>> arrays(feeds.begin(), feeds.end());
    // Stored, not deflated: float inputs barely compress, and deflating 20 of them took longer than the run.
    FERRY_RETURN_IF_ERROR(write_npz(path, arrays, false));
    s.replay = path;
  }
  return rep_;
}

Result<EvaluateReport> run_evaluate(const EvaluateOptions& o) {
  FERRY_RETURN_IF_ERROR(check_options(o));
  const auto start = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(DataSet ds, list_samples(o.data, o.labels));
  const std::vector<SampleRef> samples = shard_of(ds.samples, o.shard_index, o.shard_count);
  if (samples.empty())
    return Status::invalid("--shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) + ": " +
                           std::to_string(ds.samples.size()) + " samples leave this shard none");
  FERRY_ASSIGN_OR_RETURN(auto ev, Evaluation::start(o, o.data, static_cast<int64_t>(ds.samples.size())));
  const int workers = o.workers > 0 ? o.workers : 2;
  const size_t chunk = static_cast<size_t>(ev->evaluator().chunk());
  Prefetcher pf(samples, ev->inputs(), ev->preprocess() ? &*ev->preprocess() : nullptr, workers,
                chunk * 2 + static_cast<size_t>(workers));
  const size_t n = samples.size();
  for (size_t first = 0; first < n; first += chunk) {
    const size_t count = std::min(n - first, chunk);
    std::vector<Feeds> batch;
    std::vector<SampleRef> refs;
    std::vector<int64_t> indices;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = first; i < first + count; ++i) {
      FERRY_ASSIGN_OR_RETURN(Feeds f, pf.take(i));
      batch.push_back(std::move(f));
      refs.push_back(samples[i]);
      indices.push_back(static_cast<int64_t>(i * o.shard_count + o.shard_index));
    }
    ev->timing().data_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    FERRY_RETURN_IF_ERROR(ev->run(std::move(batch), refs, indices).status());
    if (o.progress) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      o.progress(static_cast<int64_t>(first + count), static_cast<int64_t>(n), (first + count) / std::max(t, 1e-9));
    }
  }
  ev->timing().data_work_s = pf.work_seconds();
  ev->timing().wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto rep = ev->finish();
  if (rep.ok()) rep->classes = ds.classes;
  return rep;
}

}  // namespace ferry::tools::evaluate
