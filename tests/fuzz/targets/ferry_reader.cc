// Fuzz target: the .ferry reader (FlatBuffers verification, field checks, ir::verify) from bytes, and
// for an accepted file the second parse that geared models use (reparse_model).
#include <cstdint>

#include "format/ferry_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = ferry::format::read_model_bytes(data, size, "fuzz.ferry");
  if (!model.ok()) return 0;
  auto again = ferry::format::reparse_model(*model);
  if (!again.ok()) ferry::fuzz::broken("an accepted .ferry file fails its reparse: " + again.status().to_string());
  return 0;
}
