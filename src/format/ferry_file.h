// The .ferry offline model file (docs/file-format.md): a size-prefixed FlatBuffer (schema
// ferry_model.fbs, identifier "FRRY") holding the compile options and the optimized portable graph,
// followed by a weight section with every constant tensor at a 64-byte aligned offset. The reader maps
// the file and validates every field before any of it becomes IR: a truncated, corrupted or hostile
// file gets a Status naming the file and the field, never a crash or a read outside the mapping.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::format {

// The format version this build writes. A reader accepts any minor of its major (and older majors it
// still knows: none yet) and refuses a newer major.
inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 0;
inline constexpr char kFileIdentifier[] = "FRRY";
inline constexpr uint64_t kWeightAlignment = 64;

// How the model was compiled; stored in the file so it says how it was made.
struct CompileOptions {
  int opt_level = 2;
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input-shape
  std::vector<int64_t> dynamic_batch;                        // gears; empty: fixed shapes
  std::string precision = "fp32";
  std::string source_path;
  uint64_t source_size = 0;
  int64_t source_mtime_ns = 0;
  std::string target;       // "" none; else the placement and default precision were decided for it
  std::string cpu_options;  // backends::to_string(CpuOptions) asked for at compile time
};

// Limits the reader enforces (beyond the file's own size); defaults fit every real model.
struct ReadLimits {
  int max_subgraph_depth = 32;
  uint32_t max_flatbuffer_depth = 256;     // nested tables (subgraphs nest several tables each)
  uint32_t max_flatbuffer_tables = 50'000'000;
};

// A model read back from a .ferry file. Constant tensors are views into the file mapping, which stays
// mapped while any of them (or `mapping`) is alive.
struct FerryModel {
  std::unique_ptr<ir::Model> model;
  CompileOptions options;
  std::string producer;  // "ferry 0.1.0"
  uint16_t version_major = 0, version_minor = 0;
  std::shared_ptr<void> mapping;
  uint64_t file_size = 0;
  uint64_t weight_bytes = 0;  // bytes of the weight section's tensors
  // The validated file bytes (inside `mapping`) and the name errors use, for reparse_model.
  const uint8_t* data = nullptr;
  std::string label;
  ReadLimits limits;
};


// True when `bytes` (the first bytes of a file, at least 12) carry the .ferry identifier.
bool has_ferry_identifier(const void* bytes, size_t n);
// Reads the first bytes of `path` and checks the identifier; false for unreadable or short files.
bool is_ferry_file(const std::string& path);

// Writes `model` (its main graph, subgraphs, constants) and `opts` to `path` atomically: the bytes go
// to a temporary file in the same folder, which is renamed over `path` only when complete.
Status write_model(const ir::Model& model, const CompileOptions& opts, const std::string& path);

// Maps and validates `path`; see the file comment. The model's source_path is `path`.
Result<FerryModel> read_model(const std::string& path, const ReadLimits& limits = {});
// The same from bytes in memory (copied into an aligned buffer); `label` names it in errors.
Result<FerryModel> read_model_bytes(const void* data, size_t n, const std::string& label,
                                    const ReadLimits& limits = {});

// Parses the graph part again into a fresh ir::Model that shares the weight mapping (for one session
// per dynamic-batch gear). `m` must come from read_model.
Result<std::unique_ptr<ir::Model>> reparse_model(const FerryModel& m);

}  // namespace ferry::format
