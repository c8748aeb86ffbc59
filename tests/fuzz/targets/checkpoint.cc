// Fuzz target: the checkpoint readers behind read_checkpoint (torch .pth zip with its pickle,
// safetensors, MindSpore .ckpt, .npz), chosen from the content as for a user's file.
#include <cstdint>

#include "fuzz_input.h"
#include "weights/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto ckpt = ferry::weights::read_checkpoint(ferry::fuzz::as_file(data, size, "in.ckpt"));
  (void)ckpt;
  return 0;
}
