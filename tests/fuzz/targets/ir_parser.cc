// Fuzz target: the IR text parser (docs/ir.md). A model it accepts must print and parse again.
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "ir/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto model = ferry::ir::parse_model(text);
  if (!model.ok()) return 0;
  const std::string printed = ferry::ir::print_model(**model);
  auto again = ferry::ir::parse_model(printed);
  if (!again.ok())
    ferry::fuzz::broken("the printer's text of an accepted model does not parse: " + again.status().to_string());
  return 0;
}
