// Read-only file mappings that tensors point into (a .ferry file's weight section), and giving their
// pages back once nothing needs them resident.
//
// A kernel that prepacks a weight (Kernel::adopt_constant) reads the mapped original once; its packed
// copy then replaces the initializer, but the mapped pages it read stay in the process's resident set
// until the mapping goes: a compiled bert_like peaked at 691 MiB where its .onnx took 370. Dropping
// those pages (madvise MADV_DONTNEED) is safe for a private mapping of a file that nothing wrote to:
// a later read faults the same bytes back in from the file (another gear's session may still read it).
// Only ranges inside a registered mapping are touched, never heap memory, which the same call would zero.
#pragma once
#include <cstddef>

namespace ferry {

// Called by the owner of a mapping right after mmap and before munmap.
void register_file_mapping(const void* addr, size_t size);
void unregister_file_mapping(const void* addr);

// Drops the resident pages wholly inside [p, p + n) when that range lies in a registered mapping;
// returns the bytes released (0 when the range is not mapped from a file or spans no whole page).
size_t release_file_pages(const void* p, size_t n);

}  // namespace ferry
