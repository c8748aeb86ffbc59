#include "tools/compare/dump.h"

#include <sstream>

#include "tools/compare/compare_internal.h"
#include "tools/run_inputs.h"

namespace ferry::tools::compare {

std::set<std::string> split_names(const std::vector<std::string>& args) {
  std::set<std::string> out;
  for (const std::string& a : args) {
    std::stringstream ss(a);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.insert(item);
  }
  return out;
}

Result<DumpResult> run_and_dump(runtime::ModelSession& runner, const std::map<std::string, RtValue>& feeds,
                                const std::string& dir, const std::set<std::string>& only) {
  FERRY_ASSIGN_OR_RETURN(size_t which, runner.pick_session(feeds));
  const ir::Graph& g = runner.session(which).graph();
  if (!only.empty()) {
    std::set<std::string> known;
    for (const auto& v : g.values)
      if (!v->onnx_name.empty()) known.insert(v->onnx_name);
    for (const std::string& n : only)
      if (!known.count(n))
        return Status::invalid("--dump-tensors: '" + n + "' is not a tensor of the prepared graph (a tensor that an "
                               "optimization fused or folded away exists only at --opt-level 0)");
  }
  FERRY_ASSIGN_OR_RETURN(CapturedRun run, run_capturing(runner, feeds, true));
  std::vector<std::pair<std::string, RtValue>> tensors;
  std::set<std::string> seen;
  for (const Seen& s : run.order) {
    if (!only.empty() && !only.count(s.onnx_name)) continue;
    if (!seen.insert(s.onnx_name).second) continue;
    auto it = run.tensors.find(s.onnx_name);
    if (it != run.tensors.end()) tensors.emplace_back(s.onnx_name, RtValue(it->second));
  }
  DumpResult r;
  FERRY_ASSIGN_OR_RETURN(r.written, write_outputs(dir, tensors, &r.notes));
  r.outputs = std::move(run.outputs);
  return r;
}

}  // namespace ferry::tools::compare
