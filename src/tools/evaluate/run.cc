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

Status save_worst_inputs(EvaluateReport& rep, std::map<std::string, Feeds>& kept) {
  if (rep.aggregate.worst().empty()) return Status();
  const std::string dir = (fs::path(rep.out_dir) / "worst").string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io("cannot create " + dir + ": " + ec.message());
  int k = 0;
  for (SampleResult& s : rep.aggregate.worst()) {
    auto it = kept.find(s.id);
    if (it == kept.end()) continue;
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%03d_", k++);
    FERRY_ASSIGN_OR_RETURN(std::string path, output_file(dir, prefix + sanitize_name(s.id) + ".npz"));
    std::vector<std::pair<std::string, Tensor>> arrays(it->second.begin(), it->second.end());
    FERRY_RETURN_IF_ERROR(write_npz(path, arrays, true));
    s.replay = path;
  }
  return Status();
}

}  // namespace

Result<EvaluateReport> run_evaluate(const EvaluateOptions& o) {
  FERRY_RETURN_IF_ERROR(check_options(o));
  const auto start = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(DataSet ds, list_samples(o.data, o.labels));
  std::optional<PreprocessSpec> pre;
  if (!o.preprocess.empty()) {
    FERRY_ASSIGN_OR_RETURN(pre, parse_preprocess(o.preprocess));
  }
  const std::vector<SampleRef> samples = shard_of(ds.samples, o.shard_index, o.shard_count);
  if (samples.empty())
    return Status::invalid("--shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) + ": " +
                           std::to_string(ds.samples.size()) + " samples leave this shard none");
  FERRY_ASSIGN_OR_RETURN(auto ev, Evaluator::open(o.model, o.golden, o.target, o.batch, o.thresholds));

  EvaluateReport rep;
  rep.model = o.model;
  rep.data = o.data;
  rep.labels = o.labels;
  rep.preprocess = pre ? describe(*pre) : "";
  rep.golden = ev->golden_label();
  rep.target = ev->target_label();
  rep.target_flags = compare::session_flags_text(o.target, o.target.precision.keep_fp32_file);
  rep.batch = o.batch;
  rep.workers = o.workers > 0 ? o.workers : 2;
  rep.shard_index = o.shard_index;
  rep.shard_count = o.shard_count;
  rep.dataset_samples = static_cast<int64_t>(ds.samples.size());
  rep.classes = ds.classes;
  rep.aggregate = Aggregate(o.worst);
  rep.out_dir = o.out_dir;
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Status::io("cannot create " + o.out_dir + ": " + ec.message());
  FERRY_ASSIGN_OR_RETURN(rep.samples_file, output_file(o.out_dir, "samples.jsonl"));
  std::ofstream jsonl(rep.samples_file, std::ios::trunc);
  if (!jsonl) return Status::io("cannot write " + rep.samples_file);

  std::map<std::string, Feeds> kept;  // inputs of the current worst cases, by id
  Prefetcher pf(samples, ev->inputs(), pre ? &*pre : nullptr, rep.workers,
                static_cast<size_t>(o.batch) * 2 + static_cast<size_t>(rep.workers));
  const size_t n = samples.size();
  for (size_t first = 0; first < n; first += static_cast<size_t>(o.batch)) {
    const size_t count = std::min(n - first, static_cast<size_t>(o.batch));
    std::vector<Feeds> batch;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = first; i < first + count; ++i) {
      FERRY_ASSIGN_OR_RETURN(Feeds f, pf.take(i));
      batch.push_back(std::move(f));
    }
    rep.timing.data_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    FERRY_ASSIGN_OR_RETURN(std::vector<SampleResult> results, ev->evaluate(batch));
    for (size_t k = 0; k < count; ++k) {
      SampleResult& r = results[k];
      const SampleRef& ref = samples[first + k];
      r.index = static_cast<int64_t>((first + k) * o.shard_count + o.shard_index);
      r.id = ref.id;
      r.path = ref.path;
      r.label = ref.label;
      Evaluator::judge_label(r);
      if (rep.aggregate.would_keep(r)) kept[r.id] = std::move(batch[k]);
      rep.aggregate.add(r);
      jsonl << to_json(r).dump() << '\n';
    }
    // Inputs of samples pushed out of the worst list are dropped.
    std::set<std::string> worst_ids;
    for (auto& s : rep.aggregate.worst()) worst_ids.insert(s.id);
    for (auto it = kept.begin(); it != kept.end();) it = worst_ids.count(it->first) ? std::next(it) : kept.erase(it);
    if (o.progress) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      o.progress(static_cast<int64_t>(first + count), static_cast<int64_t>(n), (first + count) / std::max(t, 1e-9));
    }
  }
  jsonl.close();
  if (!jsonl) return Status::io("cannot write " + rep.samples_file);
  FERRY_RETURN_IF_ERROR(save_worst_inputs(rep, kept));
  rep.timing.data_work_s = pf.work_seconds();
  rep.timing.golden_s = ev->golden_seconds();
  rep.timing.target_s = ev->target_seconds();
  rep.timing.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

}  // namespace ferry::tools::evaluate
