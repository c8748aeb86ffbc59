// Shared by the fuzz targets (tests/fuzz/targets): the input as a file, for readers that take a path
// (.npz, checkpoints, images). One file per process, rewritten for every input, in a private folder
// under $TMPDIR so parallel fuzzers (-jobs) never share one.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ferry::fuzz {

// Writes data to this process's scratch file named `name` ("in.npz": some readers look at the suffix)
// and returns its path.
inline std::string as_file(const uint8_t* data, size_t size, const std::string& name) {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string d = std::string(tmp && *tmp ? tmp : "/tmp") + "/ferry-fuzz-" + std::to_string(getpid());
    std::string cmd_dir = d;
    if (mkdtemp(cmd_dir.append("-XXXXXX").data()) == nullptr) std::abort();
    return cmd_dir;
  }();
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// A property the loaders promise was broken: report it the way a crash is reported.
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz: broken promise: %s\n", what.c_str());
  std::abort();
}

}  // namespace ferry::fuzz
