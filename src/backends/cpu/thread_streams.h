// One oneDNN stream and one scratchpad per OpenMP thread, for kernels that run single-threaded primitives
// from inside their own parallel region (oneDNN runs a primitive on the calling thread alone there): the
// row tiles of long attention (attention_tiles.h) and the row blocks of some bf16 matmuls (matmul.cc).
// Those primitives are created with scratchpad_mode::user, since the library's scratchpad is not for
// concurrent use.
#pragma once
#include <dnnl.hpp>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace ferry::backends::cpu {

class ThreadStreams {
 public:
  // Streams and scratchpads of at least `scratchpad_bytes` for threads [0, threads): call before the
  // parallel region (it only grows them).
  void reserve(int threads, size_t scratchpad_bytes);
  dnnl::stream& stream(int thread) { return threads_[thread].stream; }
  // Adds the thread's scratchpad as DNNL_ARG_SCRATCHPAD where the primitives need one.
  void add_scratchpad(int thread, std::unordered_map<int, dnnl::memory>& args);

 private:
  struct PerThread {
    std::vector<char> scratchpad;
    dnnl::stream stream;
  };
  std::vector<PerThread> threads_;
  size_t bytes_ = 0;
};

// Runs body(thread, threads) on each of `threads` OpenMP threads. A dnnl::error thrown on a thread (which
// must not leave the parallel region) becomes an internal error: "<what>: oneDNN failed: ...".
Status run_on_threads(int threads, const std::string& what, const std::function<void(int, int)>& body);

}  // namespace ferry::backends::cpu
