// `ferry compare --repro DIR`: a standalone reproduction of the first divergent node (repro.cc).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "runtime/session.h"
#include "tools/compare/compare.h"

namespace ferry::tools::compare {

struct ReproBundle {
  std::string dir, model;     // DIR and DIR/model.onnx
  std::string command;        // the `ferry compare` command that reproduces it, run in DIR
  int nodes = 0;              // ONNX nodes in the subgraph
  std::vector<std::string> notes;
};

// Cuts the ONNX nodes `row` covers out of the model file `model` (whose imported graph is `original`)
// and writes the bundle: the subgraph with its initializers, its inputs (from `golden`), the golden
// output, and a README with the metrics and the command (with `candidate`'s flags).
// The flags that give a Session these options, as `ferry compare/run/bench` take them ("--backend cpu
// --opt-level 2 --precision fp16"); --keep-fp32 names `keep_fp32_file` when one is given.
std::string session_flags_text(const runtime::SessionOptions& so, const std::string& keep_fp32_file = "");

Result<ReproBundle> write_repro(const std::string& model, const ir::Graph& original, const Row& row,
                                const TensorMap& golden, const runtime::SessionOptions& candidate,
                                const std::string& dir);

}  // namespace ferry::tools::compare
