// Fuzz target: ONNX import (protobuf parse, IR build, shape inference, op checks) from bytes, then
// ir::verify on whatever was accepted. External data is forbidden (no base folder), so nothing outside
// the input is read. A model the importer accepts must verify.
#include <cstdint>
#include <string>

#include "frontend/onnx/import.h"
#include "fuzz_input.h"
#include "ir/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ferry::frontend::ImportOptions opts;
  opts.check_ops = false;  // reach shape inference and the IR for any op, as `inspect` does
  auto model = ferry::frontend::load_onnx_bytes(bytes, "", "fuzz.onnx", opts);
  if (!model.ok()) return 0;
  ferry::Status st = ferry::ir::verify(*(*model)->graph);
  if (!st.ok()) ferry::fuzz::broken("an imported model fails verify: " + st.to_string());
  return 0;
}
