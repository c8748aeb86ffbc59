// Target profiles: what a device can run, as data. A profile (JSON, docs/targets.md) lists the op types
// the device runs with opset ranges, dtype and attribute constraints per op, inputs that must be
// constant, which dynamic-shape modes, data-dependent shapes and control flow it allows, its precision
// modes with the default, and the host target that takes fallback nodes. The built-in profiles
// (src/targets/profiles/*.json) are embedded in the binary at build time; `--target FILE` reads a
// user's own. `check`, legalization and the partitioner all read the same Target.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "ir/graph.h"

namespace ferry::targets {

// An attribute's allowed values (ints and strings are compared as their text); `dflt` is the ONNX
// default, checked when the node leaves the attribute out.
struct AttrConstraint {
  std::vector<std::string> values;
  std::optional<std::string> dflt;
};

struct OpRule {
  int min_opset = 0, max_opset = 0;  // 0: the target's range
  // Allowed element types by slot: "in:N", "out:N" or "*" (every tensor input and output).
  std::map<std::string, std::vector<DType>> dtypes;
  std::map<std::string, AttrConstraint> attrs;
  std::vector<int> const_inputs;  // input slots that must be compile-time constants
  bool data_dependent = false;    // the output shape depends on input values (NonZero, Unique, ...)
};

struct Target {
  std::string name, description, source;
  std::string backend = "cpu";  // local backend that runs the device part
  bool emulated = false;        // no local device: the device part runs on the CPU under its numerics
  std::string host;             // fallback target ("" none: unsupported nodes stay unsupported)
  int min_opset = 7, max_opset = 23;
  bool all_ops = false;         // every op ferry has a kernel for (cpu, reference)
  std::vector<DType> dtypes;    // element types the device stores at all
  std::map<std::string, OpRule> ops;
  std::vector<std::string> dynamic_shapes;  // of "static", "gears", "ranges", "any"
  std::string data_dependent_shapes = "device";  // where data-dependent-shape ops go: device | host | unsupported
  std::vector<std::string> control_flow;         // subgraph ops the device runs (If, Loop, Scan)
  std::vector<std::string> precision_modes = {"fp32"};
  std::string default_precision = "fp32";
  std::string file;  // where it came from ("builtin:ascend310p" or a path)

  bool allows_dynamic(const std::string& mode) const;
  bool allows_control_flow(const std::string& op) const;
  bool has_precision(const std::string& mode) const;
  // The rule for op_type in the default domain, or null when the target lacks the op (all_ops
  // targets: an empty rule for anything the op registry knows).
  const OpRule* rule(const std::string& domain, const std::string& op_type) const;
};

// A built-in name ("ascend310p") or a path to a JSON profile. Errors name the file and the line/key.
Result<Target> load_target(const std::string& name_or_path);
// The fallback target `t.host` names, loaded; nullopt when t has none. Errors say whose host it is.
Result<std::optional<Target>> load_host_target(const Target& t);
// Parses profile text; `label` names it in errors. `base` profiles resolve through load_target.
Result<Target> parse_target(const std::string& text, const std::string& label);
std::vector<std::string> builtin_target_names();
// The JSON text of a built-in profile, or null.
const char* builtin_target_text(const std::string& name);

}  // namespace ferry::targets
