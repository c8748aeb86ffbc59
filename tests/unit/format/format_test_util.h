// Shared by the format tests: models that cover what the file must carry, and a deep comparison of two
// ir::Models that says where they differ (print_graph does not show every field, e.g. tensor bytes).
#pragma once
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "core/tensor.h"
#include "ir/graph.h"

namespace ferry::format::testing {

// A graph with every attribute kind, every dtype as a constant, sequence and optional values, symbolic
// and unknown dims, an unknown-rank value, omitted inputs and outputs, merged provenance, and nested
// subgraphs that use outer-scope values. Structurally valid (ir::verify) but not meant to run.
std::unique_ptr<ir::Model> kitchen_sink_model();

// A small runnable ONNX model (bytes): Add/Mul with initializers (one fp16 through Cast), If whose
// branches read an outer value, Loop whose body reads an outer initializer, a sequence output.
// Inputs: x float[batch,4], and c bool[] (the If condition) unless `cond_input` is false (then c is a
// constant false, so every input has the batch dim).
std::string runnable_onnx_model(bool cond_input = true);

// "" when equal, else the first difference ("graph 'g' value 3 ('w'): initializer bytes differ").
std::string diff_models(const ir::Model& a, const ir::Model& b);

// A fresh temporary folder, removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  TempDir();
  ~TempDir();
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace ferry::format::testing
