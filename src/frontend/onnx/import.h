// ONNX protobuf -> ferry IR.
#pragma once
#include <memory>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace ferry::frontend {

struct ImportOptions {
  // Lowest default-domain opset accepted.
  int min_opset = 7;
  // Check every node against the op registry and fail with one error listing all unsupported ops.
  bool check_ops = true;
  // Accept a default-domain opset newer than ops::kNewestOnnxOpset (--allow-newer-opset); refused otherwise.
  bool allow_newer_opset = false;
};

// "opset 99 is newer than the newest ferry supports (28)" when the model's default-domain opset is newer
// than ops::kNewestOnnxOpset; "" otherwise. For the refusal at import and the warnings of inspect and check.
std::string newer_opset_note(const ir::Model& model);

// Loads MODEL.onnx (external data resolved only inside the model's folder) into IR, runs inference.
Result<std::unique_ptr<ir::Model>> load_onnx(const std::string& path, const ImportOptions& opts = {});

// While an ImportCache lives (a command whose stages each need the same model: migrate), load_onnx of a
// file it already imported (same path, size, modification time and options) returns a copy of that
// import (ir::Model::clone: constant buffers shared) instead of reading and importing the file again.
// Scoped, so a long-lived library user never pins models it is done with.
class ImportCache {
 public:
  ImportCache();
  ~ImportCache();
  ImportCache(const ImportCache&) = delete;
  ImportCache& operator=(const ImportCache&) = delete;
};
// How many times load_onnx read and imported a file in this process (copies from an ImportCache not
// counted): what `migrate` reports, and what its test checks.
int64_t onnx_files_imported();
// Same from bytes already in memory; `base_dir` is where external data may live ("" forbids it).
Result<std::unique_ptr<ir::Model>> load_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                                   const std::string& label, const ImportOptions& opts = {});

// A TensorProto -> Tensor (raw_data or typed fields; external data only under base_dir).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
// Reads a serialized TensorProto file (the conformance suite's input_N.pb / output_N.pb).
Result<Tensor> read_tensor_pb(const std::string& path);
// Reads a .pb holding a TensorProto, SequenceProto or OptionalProto (which one: `kind`).
Result<RtValue> read_value_pb(const std::string& path, ir::ValueKind kind);

}  // namespace ferry::frontend
