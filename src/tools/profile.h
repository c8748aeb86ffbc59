// `ferry profile`: where a model's time goes, per node of the prepared graph (fused kernels listed with
// the ONNX nodes they cover): kernel, mean time and share, FLOPs and GFLOP/s where an estimate exists,
// bytes moved (inputs + outputs); a summary per op type; the memory plan's arena and the weight bytes;
// and a Chrome trace (chrome://tracing, Perfetto) of every node of every run.
//
// Timing: a node hook notes the time after each node; a node's time is the gap since the previous one
// (the hook's own work excluded). The hook only observes (HookMode::kObserve): the arena stays in use
// and blocked layouts stay blocked, so the run is the one `ferry bench` times. (A keeping hook made every
// blocked tensor plain and back, which more than doubled efficientnet_b0's total.)
//
// With --target, each node is placed as `ferry check` places it (device, or host fallback) and the
// report splits the time by side and lists the bytes that cross per inference (inputs to the device,
// outputs back, values at fallback borders). For an emulated device nothing crosses on this machine:
// the transfer time is an estimate at a stated link bandwidth, and says so.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "runtime/session.h"
#include "tools/run_inputs.h"

namespace ferry::tools {

struct ProfileOptions {
  std::string model;
  runtime::SessionOptions session;
  InputOptions inputs;
  int runs = 10;
  int warmup = 2;
  double link_gb_per_s = 16;  // for the transfer-time estimate of emulated targets (PCIe 4.0 x16, effective)
  std::function<void(const std::string&)> progress;
};

struct NodeProfile {
  std::string node, op, kernel;
  std::vector<std::string> covers;  // ONNX nodes (provenance)
  double mean_ms = 0, share = 0;
  double flops = -1;                // -1: no estimate
  double bytes = 0;                 // inputs + outputs, from the last run
  std::string placement;            // with a target: "device" or "host"
};

// Where a partitioned model's time and bytes go (a target given).
struct TransferProfile {
  std::string target;
  bool emulated = false;
  int device_nodes = 0, host_nodes = 0;  // of the prepared (fused) graph
  double device_ms = 0, host_ms = 0;
  int64_t input_bytes = 0, output_bytes = 0, border_bytes = 0;  // per inference, -1 unknown
  int64_t borders = 0;                                           // values crossing at fallback borders
  double estimated_us = -1;  // transfer time at the link bandwidth (emulated targets), -1 unknown
  double link_gb_per_s = 0;
};

struct OpTypeProfile {
  std::string op;
  int nodes = 0;
  double ms = 0, share = 0, flops = 0;
};

struct TraceEvent {
  std::string name, op;
  int run = 0;
  double ts_us = 0, dur_us = 0;
};

// A node the next performance cliff may hide in: a kernel far below the machine's compute peak that
// takes a real share of the time, or a oneDNN reference implementation (never wanted: they run at a
// few hundred MFLOP/s).
struct ProfileFlag {
  std::string node, kernel, reason;
  double share = 0;
};
// A node with a FLOP estimate is flagged below this fraction of the fp32 peak while taking over
// kSlowShare of the time.
inline constexpr double kSlowFractionOfPeak = 0.05, kSlowShare = 0.02;

struct ProfileReport {
  std::string model, backend, precision;
  int runs = 0;
  double total_ms = 0;  // mean per run, sum of the nodes
  std::vector<NodeProfile> nodes;       // graph order
  std::vector<OpTypeProfile> by_type;   // largest first
  uint64_t arena_bytes = 0, weight_bytes = 0;
  int64_t peak_rss_bytes = 0;  // the process's peak resident memory (VmHWM) after the runs
  std::vector<TraceEvent> trace;
  std::string transfers;  // host<->device transfers: what is known about them
  std::optional<TransferProfile> partition;  // with a target
  double peak_gflops = 0;           // this machine's fp32 FMA peak at the run's threads (cpu backend; 0 unknown)
  std::vector<ProfileFlag> flags;   // slow kernels and reference implementations, largest share first
};

// The flags for `r`'s nodes against `peak_gflops` (0: only reference implementations are flagged).
std::vector<ProfileFlag> flag_slow_nodes(const ProfileReport& r, double peak_gflops);

Result<ProfileReport> run_profile(const ProfileOptions& o);
std::string format_profile(const ProfileReport& r, size_t top = 25);
nlohmann::json profile_to_json(const ProfileReport& r);
// Chrome trace event format: {"traceEvents": [{name, cat, ph:"X", ts, dur, pid, tid, args}], ...}.
nlohmann::json profile_to_trace(const ProfileReport& r);
std::string profile_to_csv(const ProfileReport& r);

}  // namespace ferry::tools
