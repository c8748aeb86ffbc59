// A large scratch buffer per calling thread, shared by the cpu kernels that need one only while they
// run (a session runs its nodes one after another on its thread, so no two users hold it at once).
#pragma once
#include <cstddef>

#include "core/status.h"

namespace ferry::backends::cpu {

// At least `bytes` bytes, 64-byte aligned and uninitialized, valid until this thread's next call.
// Why one buffer and not one per kernel: it is warm in cache from the kernel before (vit_b_16's twelve
// attentions at batch 1 in bf16 held 2.8 MB each, cold whenever their turn came: 0.76 ms against 0.43
// with one shared block, 2 threads, Intel Xeon with AMX), it is not page-faulted in again every run
// (an LSTM's 6.5 MB input projection at batch 8 was), and the process holds the largest once.
Result<char*> thread_scratch(size_t bytes);

}  // namespace ferry::backends::cpu
