// Fuzz target: the .npy decoder (from memory) and the .npz reader (zip container, stored and deflated
// members, zip64; from a file). Inputs starting with "PK" go to the .npz reader, all others to .npy. A
// tensor read back must hold exactly the bytes its dims and dtype say.
#include <cstdint>

#include "core/npy.h"
#include "fuzz_input.h"

namespace {

void check(const ferry::Tensor& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  if (n != t.numel() || t.nbytes() != static_cast<size_t>(n) * ferry::dtype_size(t.dtype()))
    ferry::fuzz::broken("a decoded tensor's size disagrees with its dims");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    auto arrays = ferry::read_npz(ferry::fuzz::as_file(data, size, "in.npz"));
    if (arrays.ok())
      for (const auto& [name, t] : *arrays) check(t);
    return 0;
  }
  auto t = ferry::decode_npy(data, size, "fuzz.npy");
  if (t.ok()) check(*t);
  return 0;
}
