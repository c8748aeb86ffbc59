// A read-only file with bounds-checked positional reads, and little-endian loads: what the readers of
// user files (.npy, zip archives, checkpoints) share. Every read names what it wanted, so a truncated
// file is an error that says which part is missing.
#pragma once
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ferry {

class ReadOnlyFile {
 public:
  ReadOnlyFile() = default;
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  // Opens a regular file (a directory, a FIFO or a device is an error naming the path).
  Status open(const std::string& path);
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Reads exactly `n` bytes at `off`; an error (naming `what`) when the file is shorter.
  Status read_at(uint64_t off, void* dst, size_t n, const char* what) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

inline uint16_t load_le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t load_le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t load_le64(const unsigned char* p) {
  return load_le32(p) | (static_cast<uint64_t>(load_le32(p + 4)) << 32);
}

}  // namespace ferry
