// ferry.check / compile / compare / bench: the CLI's tools called with the same options, their reports
// handed to Python as the CLI's JSON text (reports.py turns it into typed objects), so `.to_dict()`
// equals what `ferry <command> --json` writes. The GIL is released while a tool works.
#include <pybind11/stl.h>

#include "bindings.h"
#include "frontend/onnx/import.h"
#include "tools/bench.h"
#include "tools/check.h"
#include "tools/compare/compare.h"
#include "tools/compile.h"

namespace ferry::python {
namespace {

template <class F>
auto without_gil(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

// Input files by input name (.npy: the caller's, or written by the Python side from arrays), or a folder /
// .npz of them (the CLI's --inputs), and seeded random inputs for the rest.
tools::InputOptions input_options(const std::map<std::string, std::string>& files, const std::string& inputs_path,
                                  const std::map<std::string, std::vector<int64_t>>& shapes, uint64_t seed) {
  tools::InputOptions in;
  in.files = files;
  in.inputs_path = inputs_path;
  in.shapes = shapes;
  in.seed = seed;
  check(tools::add_file_shapes(in));
  return in;
}

std::string check_json(const std::string& model, const std::string& target,
                       const std::map<std::string, std::vector<int64_t>>& shapes) {
  tools::CheckOptions o;
  o.target = target;
  o.input_shapes = shapes;
  auto r = without_gil([&] { return tools::check_model(model, o); });
  return tools::check_to_json(unwrap(std::move(r))).dump();
}

std::string compile_json(const std::string& model, const std::string& output, const py::dict& options,
                         const std::vector<int64_t>& dynamic_batch, const std::string& preprocess) {
  runtime::SessionOptions so = session_options(options);
  tools::CompileRequest req;
  req.model_path = model;
  req.output_path = output;
  req.prepare = so;  // slices the run-only fields away
  req.cpu = so.backend_options.cpu;
  req.allow_newer_opset = so.allow_newer_opset;
  req.dynamic_batch = dynamic_batch;
  req.preprocess = preprocess;
  auto r = without_gil([&] { return tools::compile_model(req); });
  return tools::compile_report_to_json(unwrap(std::move(r))).dump();
}

std::string compare_json(const std::string& model, const std::string& golden, const py::dict& candidate,
                         const std::map<std::string, std::string>& files, const std::string& inputs_path,
                         const std::map<std::string, std::vector<int64_t>>& shapes, uint64_t seed, bool layerwise,
                         bool single_op, bool ranges, const std::map<std::string, double>& thresholds,
                         const std::string& repro) {
  tools::compare::CompareOptions o;
  o.model = model;
  o.candidate = session_options(candidate);
  o.golden = unwrap(tools::compare::parse_golden(golden));
  o.inputs = input_options(files, inputs_path, shapes, seed);
  o.layerwise = layerwise;
  o.single_op = single_op;
  o.ranges = ranges;
  o.repro_dir = repro;
  o.thresholds = compare_thresholds(thresholds);
  auto r = without_gil([&] {
    frontend::ImportCache import_cache;  // the golden and the candidate import the model once
    return tools::compare::run_compare(o);
  });
  return tools::compare::report_to_json(unwrap(std::move(r))).dump();
}

std::string bench_json(const std::string& model, const py::dict& session, const std::vector<int64_t>& batches,
                       const std::map<std::string, std::string>& files, const std::string& inputs_path,
                       const std::map<std::string, std::vector<int64_t>>& shapes, std::optional<int64_t> warmup,
                       std::optional<int64_t> iterations, std::optional<double> duration,
                       const std::vector<std::string>& peers, int rounds) {
  runtime::SessionOptions so = session_options(session);
  tools::BenchOptions o;
  o.model = model;
  o.batches = batches;
  o.threads = so.backend_options.threads;
  o.backend = so.backend;
  o.opt_level = so.opt_level;
  o.precision = so.precision;
  o.precision_given = so.precision_given;
  o.target = so.target;
  o.cpu = so.backend_options.cpu;
  o.allow_newer_opset = so.allow_newer_opset;
  o.max_memory = so.max_memory;
  o.inputs = input_options(files, inputs_path, shapes, 0);
  if (warmup) o.warmup = tools::warmup_iterations_policy(*warmup);
  o.measure = tools::measure_policy(iterations, duration);
  o.peers = peers;
  o.rounds = rounds;
  auto r = without_gil([&] { return tools::run_bench(o); });
  tools::BenchReport rep = unwrap(std::move(r));
  rep.ferry_version = FERRY_VERSION;
  return tools::bench_report_to_json(rep).dump();
}

}  // namespace

tools::compare::Thresholds compare_thresholds(const std::map<std::string, double>& given) {
  tools::compare::Thresholds th;
  for (const auto& [k, v] : given) {
    if (k == "cosine") th.cosine_min = v;
    else if (k == "rel_euclid") th.rel_euclid_max = v;
    else if (k == "atol") th.atol = v;
    else if (k == "rtol") th.rtol = v;
    else raise_status(Status::invalid("unknown threshold '" + k + "' (cosine, rel_euclid, atol, rtol)"));
  }
  return th;
}

void register_tools(py::module_& m) {
  m.def("_check", &check_json, py::arg("model"), py::arg("target"), py::arg("shapes"));
  m.def("_compile", &compile_json, py::arg("model"), py::arg("output"), py::arg("options"), py::arg("dynamic_batch"),
        py::arg("preprocess") = "");
  m.def("_compare", &compare_json, py::arg("model"), py::arg("golden"), py::arg("candidate"), py::arg("files"),
        py::arg("inputs_path"), py::arg("shapes"), py::arg("seed"), py::arg("layerwise"), py::arg("single_op"), py::arg("ranges"),
        py::arg("thresholds"), py::arg("repro") = "");
  m.def("_bench", &bench_json, py::arg("model"), py::arg("session"), py::arg("batches"), py::arg("files"),
        py::arg("inputs_path"), py::arg("shapes"), py::arg("warmup"), py::arg("iterations"), py::arg("duration"), py::arg("peers"),
        py::arg("rounds"));
}

}  // namespace ferry::python
