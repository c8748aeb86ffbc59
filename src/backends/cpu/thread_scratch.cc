#include "backends/cpu/thread_scratch.h"

#include <cstdint>

#include "core/tensor.h"

namespace ferry::backends::cpu {

Result<char*> thread_scratch(size_t bytes) {
  thread_local Tensor buf;  // a Tensor: 64-byte aligned, counted against the session's memory budget
  if (!buf.defined() || static_cast<size_t>(buf.numel()) < bytes) {
    FERRY_ASSIGN_OR_RETURN(buf, Tensor::create_uninit(DType::kUInt8, {static_cast<int64_t>(bytes)}));
  }
  return static_cast<char*>(buf.raw());
}

}  // namespace ferry::backends::cpu
