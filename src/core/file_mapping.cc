#include "core/file_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace ferry {

namespace {

std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::map<uintptr_t, size_t>& mappings() {  // start address -> size
  static std::map<uintptr_t, size_t> m;
  return m;
}

}  // namespace

void register_file_mapping(const void* addr, size_t size) {
  std::lock_guard<std::mutex> lock(mu());
  mappings()[reinterpret_cast<uintptr_t>(addr)] = size;
}

void unregister_file_mapping(const void* addr) {
  std::lock_guard<std::mutex> lock(mu());
  mappings().erase(reinterpret_cast<uintptr_t>(addr));
}

size_t release_file_pages(const void* p, size_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  if (n == 0 || end < begin) return 0;
  std::lock_guard<std::mutex> lock(mu());
  auto it = mappings().upper_bound(begin);
  if (it == mappings().begin()) return 0;
  --it;
  if (begin < it->first || end > it->first + it->second) return 0;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return 0;
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace ferry
