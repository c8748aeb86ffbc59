// `ferry compile`: import an ONNX model, optimize it for the given shapes, and write the .ferry file
// (format/ferry_file.h). With dynamic-batch gears, dim 0 of every input stays symbolic in the stored
// graph and the file lists the gears; loading prepares one session per gear (runtime/model_session.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "backends/backend_options.h"
#include "runtime/prepare.h"

namespace ferry::tools {

struct CompileRequest {
  std::string model_path;
  std::string output_path;
  // What `run --target T --precision P --shape ...` would prepare (runtime/prepare.h): the same options
  // give the same graph. input_shapes are --input-shape's fixed shapes (ranges below).
  runtime::PrepareOptions prepare = [] {
    runtime::PrepareOptions p;
    p.opt_level = 2;
    return p;
  }();
  backends::CpuOptions cpu;                                  // stored: runs of the file use them
  std::vector<int64_t> dynamic_batch;                        // --dynamic-batch gears
  // --input-shape NAME:1~8,3,224,224 (or -1 dims): ranged dims stay symbolic, checked at run time.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> input_ranges;
  // --dynamic-dims "1,224,224;1,320,320": values for every dynamic input dim, in input order.
  std::vector<std::vector<int64_t>> dynamic_dims;
  bool allow_newer_opset = false;  // --allow-newer-opset (frontend::ImportOptions)
  // --preprocess SPEC: its per-pixel part inserted before the model (tools/evaluate/preprocess.h).
  std::string preprocess;
};

struct CompileReport {
  std::string output_path;
  int64_t nodes_before = 0, nodes_after = 0;  // subgraph nodes included
  uint64_t weight_bytes = 0, file_size = 0;
  std::vector<int64_t> gears;
  std::string dynamic_dims, input_ranges;  // as stored ("" none)
  runtime::PrepareReport prepared;
  double import_s = 0, optimize_s = 0, write_s = 0, check_s = 0, total_s = 0;
};

// "1,2,4,8" -> gears, sorted; each in 1..2^20, no duplicates.
Result<std::vector<int64_t>> parse_gears(const std::string& arg);

// Compiles; errors name the model, the input or the flag. The file is written atomically and then
// loaded back (every gear prepared), so a file that would not load is never left behind.
Result<CompileReport> compile_model(const CompileRequest& req);

std::string format_compile_report(const CompileReport& r);
// The same as JSON (schema "ferry.compile/1", docs/cli.md): `ferry compile --json` and ferry.compile().
nlohmann::json compile_report_to_json(const CompileReport& r);

}  // namespace ferry::tools
