#include "backends/cpu/thread_streams.h"

#include <omp.h>

#include <algorithm>

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu {

void ThreadStreams::reserve(int threads, size_t scratchpad_bytes) {
  if (static_cast<int>(threads_.size()) < threads) threads_.resize(threads);
  bytes_ = std::max(bytes_, scratchpad_bytes);
  for (PerThread& t : threads_) {
    if (!t.stream) t.stream = dnnl::stream(engine());
    if (t.scratchpad.size() < bytes_) t.scratchpad.resize(bytes_);
  }
}

void ThreadStreams::add_scratchpad(int thread, std::unordered_map<int, dnnl::memory>& args) {
  if (bytes_ == 0) return;
  const dnnl::memory::desc d({static_cast<int64_t>(bytes_)}, dnnl::memory::data_type::u8, dnnl::memory::format_tag::a);
  args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(d, engine(), threads_[thread].scratchpad.data());
}

Status run_on_threads(int threads, const std::string& what, const std::function<void(int, int)>& body) {
  std::string failed;
#pragma omp parallel num_threads(threads)
  {
    try {
      body(omp_get_thread_num(), omp_get_num_threads());
    } catch (const dnnl::error& e) {
#pragma omp critical(ferry_run_on_threads_error)
      failed = e.what();
    }
  }
  if (!failed.empty()) return Status::internal(what + ": oneDNN failed: " + failed);
  return Status();
}

}  // namespace ferry::backends::cpu
