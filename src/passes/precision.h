// Precision modes: which nodes of an optimized graph compute in a lower float type, and the rewrite
// that makes them do so. ferry has no fp16 hardware: a low-precision node reads its float inputs
// rounded to fp16/bf16 (constants rounded once, here) and its float outputs are rounded again (the
// com.ferry RoundFloat op), so every tensor the device would store in fp16 holds an fp16 value
// (overflow to Inf included) while the arithmetic stays fp32 — "emulated" in every report. In the
// bf16 modes the cpu backend's Conv/MatMul kernels compute natively in bf16 where the CPU has
// avx512_bf16 (the pass marks them with the attribute `ferry_precision`); the rounding is the same.
//
// The modes follow ATC's --precision_mode (docs/precision.md has the mapping):
//   fp32       must_keep_origin_dtype: nothing changes
//   fp16       force_fp16: every float node computes in fp16, except --keep-fp32 entries and the
//              deny list's ops whose fp16 results are meaningless (see precision_lists.cc)
//   bf16       the same in bf16 (ATC: force_bf16 / allow_fp32_to_bf16)
//   mixed-fp16 allow_mix_precision: allow-list ops in fp16, deny-list ops in fp32, follow-list ops
//              take their producers' precision (fp16 when every float input comes from an fp16 node)
//   mixed-bf16 allow_mix_precision_bf16: the same with bf16
// The pass runs after passes::optimize, on fused nodes; keep-lists match a node's provenance, so the
// ONNX node names a user knows still work after fusion.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::passes {

enum class PrecisionMode { kFp32, kFp16, kBf16, kMixedFp16, kMixedBf16 };

struct PrecisionOptions {
  PrecisionMode mode = PrecisionMode::kFp32;
  // Nodes kept in fp32: an ONNX node name (matched against provenance) or "OpType::X" (X an ONNX op
  // type, or a fused op type such as FusedConv).
  std::vector<std::string> keep_fp32;
  // A file of such entries (read_keep_list), added to keep_fp32.
  std::string keep_fp32_file;
  // Graph outputs produced by low-precision nodes are not rounded (the device writes them in fp32).
  bool keep_io_types = false;
  // A JSON file editing the mixed modes' lists, ATC --modify_mixlist style (precision_lists.cc).
  std::string mixlist_path;
};

struct PrecisionReport {
  PrecisionMode mode = PrecisionMode::kFp32;
  int low_nodes = 0;                   // nodes computing in fp16/bf16
  int fp32_nodes = 0;                  // float nodes left in fp32
  std::vector<std::string> kept;       // names of nodes kept fp32 by the keep list or the deny list
  std::vector<std::string> unmatched;  // keep-list entries that matched no node (a typo, or fused away)
  int rounding_nodes = 0;              // RoundFloat nodes inserted
  bool native_bf16 = false;            // Conv/MatMul marked for native bf16 compute
};

Result<PrecisionMode> parse_precision(const std::string& s);  // "fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16"
std::string to_string(PrecisionMode m);
// "fp16 (emulated: fp16 storage, fp32 compute)", "bf16 (... native bf16 on the cpu backend: AMX)", "fp32".
// `backend` runs the model; `native_bf16` and `why` are what it says of its bf16 compute
// (backends::Backend::native_bf16; runtime::describe_precision asks it).
std::string describe(PrecisionMode m, const std::string& backend, bool native_bf16, const std::string& why);
// The ATC --precision_mode value a mode corresponds to.
std::string atc_equivalent(PrecisionMode m);
bool is_low(PrecisionMode m);

// One entry per line; '#' starts a comment; blank lines skipped. Errors name the file and line.
Result<std::vector<std::string>> read_keep_list(const std::string& path);

Status apply_precision(ir::Model& model, const PrecisionOptions& opts, PrecisionReport* report);

}  // namespace ferry::passes
