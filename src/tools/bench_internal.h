// Pieces of `ferry bench` shared by its files (not a public interface): the steps that make one batch
// ready to measure (bench_batch.cc), which run_bench (bench.cc) calls once per batch.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model_session.h"
#include "runtime/session.h"
#include "tools/bench.h"

namespace ferry::tools {

// One batch's model, ready to run: a .ferry file keeps its ModelSession (a geared file holds one session
// per gear), an .onnx file its own Session.
struct BatchModel {
  std::unique_ptr<runtime::ModelSession> runner;
  std::unique_ptr<runtime::Session> own_session;
  std::map<std::string, std::vector<int64_t>> shapes;  // by input name, dim 0 the batch
  int64_t batch = 0;
  const ir::Graph& graph() const { return runner ? runner->graph() : own_session->graph(); }
  runtime::Session& first() { return runner ? runner->session(0) : *own_session; }
};

// Opens o.model for batch `want` (nullopt: the model's own batch) with `threads` threads. A .ferry file
// opens through the model loader (its graph is already optimized; a geared file runs the gear that fits
// the batch); an .onnx file is imported and optimized for this batch's shapes.
Result<BatchModel> load_batch_model(const BenchOptions& o, std::optional<int64_t> want, int threads);

// This batch's inputs as ferry feeds them and as the peers get them (.npz arrays).
struct BatchInputs {
  std::map<std::string, RtValue> feeds;
  std::vector<std::pair<std::string, Tensor>> arrays;
};
// Prepares the inputs as `ferry run` does, at the batch's shapes (an input whose dim 0 is not `want` is an
// error); records their shapes in br.input_shapes.
Result<BatchInputs> prepare_batch_inputs(const BenchOptions& o, const BatchModel& m, std::optional<int64_t> want,
                                         BatchResult& br);

// With peers: this batch's inputs for them, and where they ("{}" stands for the peer's name) and ferry put
// their outputs.
struct PeerFiles {
  PeerJob::Batch peer;
  std::string ferry_npz;
};
// Writes the inputs for the peers into `tmp_dir`, the files numbered by the batch's place in the run.
Result<PeerFiles> write_peer_inputs(const std::string& tmp_dir, int64_t batch, size_t batch_index,
                                    const std::vector<std::pair<std::string, Tensor>>& arrays);

// The session to time: for a geared .ferry file, the gear that fits these inputs (errors name `model`).
Result<runtime::Session*> session_for_batch(BatchModel& m, const std::map<std::string, RtValue>& feeds,
                                            const std::string& model);

}  // namespace ferry::tools
