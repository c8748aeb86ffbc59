#include "core/read_only_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ferry {

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReadOnlyFile::open(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::io("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::io("cannot stat '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::io("'" + path + "' is not a regular file");
  size_ = static_cast<uint64_t>(st.st_size);
  return Status();
}

Status ReadOnlyFile::read_at(uint64_t off, void* dst, size_t n, const char* what) const {
  if (off > size_ || n > size_ - off)
    return Status::invalid("'" + path_ + "' is truncated: " + what + " needs " + std::to_string(n) +
                           " bytes at offset " + std::to_string(off) + " but the file has " +
                           std::to_string(size_) + " bytes");
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::io("cannot read '" + path_ + "': " + (r < 0 ? std::strerror(errno) : "short read"));
    p += r;
    off += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return Status();
}

}  // namespace ferry
