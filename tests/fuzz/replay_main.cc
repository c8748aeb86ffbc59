// The fuzz targets without libFuzzer (any compiler): runs LLVMFuzzerTestOneInput once on each file given,
// and on every file of each folder given. The normal build's tests replay the seed corpora and the
// regression inputs (tests/fuzz/regressions: each one a crash, hang or runaway allocation a fuzzer
// found) this way. As under the fuzzer (-rss_limit_mb=2048), memory is capped: an input that makes a
// loader allocate gigabytes fails the replay (std::bad_alloc) instead of passing slowly.
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int replay(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
    return 1;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const rlim_t cap = rlim_t{4} << 30;  // address space, not resident memory: 2 GiB of data plus the binary's
  const rlimit limit{cap, cap};
  setrlimit(RLIMIT_AS, &limit);
  int failed = 0, count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) failed += replay(e.path()), ++count;
    } else {
      failed += replay(arg), ++count;
    }
  }
  std::printf("replayed %d inputs\n", count);
  return failed ? 1 : 0;
}
