// `ferry run --dump DIR`: every intermediate tensor (or the named ones) of one run, as
// DIR/<sanitize_name(ONNX tensor name)>.npy, the folder layout `ferry compare --golden DIR` and
// `--candidate DIR` read. Inputs are dumped too, so a comparison can use the very same inputs.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/model_session.h"

namespace ferry::tools::compare {

struct DumpResult {
  std::vector<std::pair<std::string, RtValue>> outputs;  // the run's outputs
  std::vector<std::string> written;                      // files, in execution order
  std::vector<std::string> notes;
};

// Checks that each name in `only` is an ONNX tensor the prepared graph still holds (a name fused away
// is an error that says which opt level keeps it), then runs with a hook and writes the tensors.
// `only` empty: all of them.
Result<DumpResult> run_and_dump(runtime::ModelSession& runner, const std::map<std::string, RtValue>& feeds,
                                const std::string& dir, const std::set<std::string>& only);

// "a,b" and repeated flags → one set; empty items are ignored.
std::set<std::string> split_names(const std::vector<std::string>& args);

}  // namespace ferry::tools::compare
