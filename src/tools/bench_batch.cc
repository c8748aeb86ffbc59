// The steps of `ferry bench` that make one batch ready to measure: its model opened for the batch's shapes,
// its inputs, the peers' copy of them, and the session to time. run_bench (bench.cc) calls them per batch.
#include <filesystem>

#include <fmt/format.h>

#include "core/npy.h"
#include "frontend/onnx/import.h"
#include "tools/bench_internal.h"

namespace ferry::tools {

namespace fs = std::filesystem;

namespace {

// Bench's flags as session options, at this batch's shapes and the resolved thread count.
runtime::SessionOptions session_options(const BenchOptions& o,
                                        const std::map<std::string, std::vector<int64_t>>& shapes, int threads) {
  runtime::SessionOptions so;
  so.backend = o.backend;
  so.input_shapes = shapes;
  so.opt_level = o.opt_level;
  so.precision = o.precision;
  so.target = o.target;
  so.precision_given = o.precision_given;
  so.allow_newer_opset = o.allow_newer_opset;
  so.max_memory = o.max_memory;
  so.backend_options.threads = threads;
  so.backend_options.cpu = o.cpu;
  return so;
}

}  // namespace

Result<BatchModel> load_batch_model(const BenchOptions& o, std::optional<int64_t> want, int threads) {
  const bool ferry_file = runtime::detect_model_file(o.model) == runtime::ModelFileKind::kFerry;
  frontend::ImportOptions import;
  import.allow_newer_opset = o.allow_newer_opset;
  auto model = runtime::open_model(o.model, import);
  if (!model.ok()) return model.status();
  auto shapes = resolve_batch_shapes(*(*model)->graph, o.inputs.shapes, want);
  if (!shapes.ok()) return shapes.status();
  BatchModel m;
  m.shapes = shapes->first;
  m.batch = shapes->second;
  const runtime::SessionOptions so = session_options(o, m.shapes, threads);
  if (ferry_file) {
    model->reset();
    auto opened = runtime::ModelSession::open(o.model, so);
    if (!opened.ok()) return opened.status();
    m.runner = std::move(opened).value();
  } else {
    auto created = runtime::Session::from_model(std::move(model).value(), so);
    if (!created.ok()) return created.status();
    m.own_session = std::move(created).value();
  }
  return m;
}

Result<BatchInputs> prepare_batch_inputs(const BenchOptions& o, const BatchModel& m, std::optional<int64_t> want,
                                         BatchResult& br) {
  InputOptions io = o.inputs;
  io.shapes = m.shapes;
  // Files keep their own shapes: --shape for a file-fed input is only checked against it.
  for (const auto& [name, file] : io.files) io.shapes.erase(name);
  auto prepared = prepare_inputs(m.graph(), io);
  if (!prepared.ok()) return prepared.status();
  BatchInputs out;
  for (const PreparedInput& in : *prepared) {
    if (want && in.tensor.rank() >= 1 && in.tensor.dims()[0] != *want)
      return Status::invalid("input '" + in.name + "' from " + in.source + " holds " + in.tensor.describe() +
                             ", whose dim 0 is not the batch " + std::to_string(*want));
    br.input_shapes[in.name] = in.tensor.dims();
    out.feeds.emplace(in.name, RtValue(in.tensor));
    out.arrays.emplace_back(in.name, in.tensor);
  }
  return out;
}

Result<PeerFiles> write_peer_inputs(const std::string& tmp_dir, int64_t batch, size_t batch_index,
                                    const std::vector<std::pair<std::string, Tensor>>& arrays) {
  fs::path dir(tmp_dir);
  PeerFiles f;
  f.peer = {batch, (dir / fmt::format("inputs_{}.npz", batch_index)).string(),
            (dir / fmt::format("{{}}_outputs_{}.npz", batch_index)).string()};
  f.ferry_npz = (dir / fmt::format("ferry_outputs_{}.npz", batch_index)).string();
  FERRY_RETURN_IF_ERROR(write_npz(f.peer.inputs, arrays));
  return f;
}

Result<runtime::Session*> session_for_batch(BatchModel& m, const std::map<std::string, RtValue>& feeds,
                                            const std::string& model) {
  if (!m.runner) return m.own_session.get();
  auto which = m.runner->pick_session(feeds);
  if (!which.ok()) return which.status().with_context(model);
  return &m.runner->session(*which);
}

}  // namespace ferry::tools
