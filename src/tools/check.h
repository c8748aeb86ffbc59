// `ferry check`: will this model run on that target, and what must change? A row per ONNX node
// (name, op, opset, placement, reason), a summary by op type, findings (dynamic input dims and the
// shape mode the target needs, shape subgraphs that fold away once shapes are fixed, data-dependent
// shapes that forbid gears) and the bytes that cross between device and host per inference.
// The analysis is of the graph as `compile` would see it: input shapes fixed, constants folded.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "targets/placement.h"
#include "targets/target.h"

namespace ferry::tools {

struct CheckOptions {
  std::string target = "cpu";  // built-in name or profile file
  // Concrete shapes for inputs (dynamic dims not given here are analysed as 1, and say so).
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

struct CheckRow {
  std::string name, op, domain;
  int opset = 0;
  targets::Placement placement = targets::Placement::kDevice;
  std::string reason, rule;
};

struct OpSummary {
  int64_t device = 0, rewritten = 0, host = 0, unsupported = 0;
};

struct CheckReport {
  std::string model, target, target_source;
  bool emulated = false;
  std::string default_precision;
  std::vector<CheckRow> rows;
  std::map<std::string, OpSummary> by_op;
  std::vector<std::string> findings;
  std::vector<std::string> folded;  // ONNX nodes that fold away once shapes are fixed
  int64_t device = 0, rewritten = 0, host = 0, unsupported = 0;
  int64_t input_bytes = 0, output_bytes = 0, transfer_bytes = 0;  // -1 unknown
  int64_t transfers = 0, segments = 0;
  std::string shape_mode;  // "static", or what the dynamic inputs need
};

Result<CheckReport> check_model(const std::string& path, const CheckOptions& opts);

std::string format_check(const CheckReport& r);
nlohmann::json check_to_json(const CheckReport& r);
std::string check_to_csv(const CheckReport& r);

// Bytes crossing per inference for people: "64 B", "1.5 KiB", "2.00 MiB", or "unknown (dynamic shapes)" for -1.
std::string bytes_text(int64_t b);

// Whether `fail_on` ("unsupported" | "fallback") is met.
bool check_fails(const CheckReport& r, const std::string& fail_on);

}  // namespace ferry::tools
