// The graph optimizer's entry point: pipelines of passes by optimization level, listed in pipeline.cc.
// A pass rewrites the graph in place and keeps provenance: every fused or rewritten node carries the
// union of the ONNX node names it stands for. The graph is verified after every pass.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace ferry::passes {

struct OptimizeOptions {
  // 0: none; 1: cleanup (dead code, identities, constant folding); 2: + fusions the cpu backend runs as
  // single kernels (BN into Conv/Gemm, conv/matmul post-ops, LayerNorm/GELU/attention); 3: + layout.
  int opt_level = 2;
  // Concrete input shapes (by graph input name), fixed before folding so shape subgraphs fold away.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// What one pass did, for `inspect`/`compile` reports.
struct PassReport {
  std::string pass;
  int changes = 0;  // rewrites applied
};

// Runs the pipeline for opts.opt_level on model.graph (and subgraphs), then re-infers shapes.
Status optimize(ir::Model& model, const OptimizeOptions& opts, std::vector<PassReport>* report = nullptr);

}  // namespace ferry::passes
