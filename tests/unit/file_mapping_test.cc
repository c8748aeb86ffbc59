// release_file_pages: drops the resident pages of a registered file mapping (they read back the same
// from the file), and refuses every range outside one, so heap memory is never zeroed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/file_mapping.h"

namespace ferry {
namespace {

// Resident set in bytes (/proc/self/statm, second field in pages).
long rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

TEST(FileMapping, ReleasedPagesLeaveTheResidentSetAndReadBackTheSame) {
  constexpr size_t kBytes = size_t{32} << 20;
  char path[] = "/tmp/ferry_mapping_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<unsigned char> data(kBytes);
  for (size_t i = 0; i < kBytes; ++i) data[i] = static_cast<unsigned char>(i * 2654435761u >> 24);
  ASSERT_EQ(::write(fd, data.data(), kBytes), static_cast<ssize_t>(kBytes));
  void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ::unlink(path);
  ASSERT_NE(m, MAP_FAILED);
  const auto* bytes = static_cast<const unsigned char*>(m);

  // Not registered yet: refused.
  EXPECT_EQ(release_file_pages(m, kBytes), 0u);
  register_file_mapping(m, kBytes);

  volatile long sum = 0;  // volatile: the touching loop must not be optimised away
  for (size_t i = 0; i < kBytes; i += 4096) sum = sum + bytes[i];
  const long touched = rss_bytes();
  const size_t released = release_file_pages(bytes + 100, kBytes - 200);  // whole pages inside only
  EXPECT_EQ(released, kBytes - 2 * 4096);
  EXPECT_LT(rss_bytes(), touched - static_cast<long>(kBytes / 2)) << "the pages stayed resident";
  EXPECT_EQ(std::memcmp(bytes, data.data(), kBytes), 0) << "a released page read back differently";
  (void)sum;

  // A range reaching past the mapping, and heap memory: refused, untouched.
  EXPECT_EQ(release_file_pages(bytes + kBytes - 4096, 8192), 0u);
  std::vector<unsigned char> heap(1 << 20, 7);
  EXPECT_EQ(release_file_pages(heap.data(), heap.size()), 0u);
  EXPECT_EQ(heap[12345], 7);

  unregister_file_mapping(m);
  EXPECT_EQ(release_file_pages(m, kBytes), 0u);
  ::munmap(m, kBytes);
}

}  // namespace
}  // namespace ferry
