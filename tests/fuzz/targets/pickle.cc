// Fuzz target: ferry's pickle interpreter alone (the part of a .pth file an attacker writes), with
// persistent ids resolved to None as a storage-less reader would: no opcode may run code or crash.
#include <cstdint>
#include <string_view>

#include "fuzz_input.h"
#include "weights/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto doc = ferry::weights::parse_pickle(
      bytes, "fuzz.pkl", [](ferry::weights::PickleDocument& d, ferry::weights::ValueId) -> ferry::Result<ferry::weights::ValueId> {
        return d.root;
      });
  if (doc.ok() && doc->root >= doc->values.size()) ferry::fuzz::broken("the pickle's root is not one of its values");
  return 0;
}
