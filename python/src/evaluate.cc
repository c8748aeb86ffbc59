// ferry.evaluate / ferry.ray: the evaluation (tools/evaluate) from Python. A whole run over a folder or
// manifest (_evaluate: the CLI's decoding threads and loop), an _Evaluation fed batch by batch from a
// Python iterable, a DataLoader or a Ray actor, and the merge of partial reports. Reports cross as the
// CLI's JSON text with its printed summary; the GIL is released while models run and files decode.
#include <pybind11/stl.h>

#include "bindings.h"
#include "tools/evaluate/evaluate.h"

namespace ferry::python {
namespace {

namespace ev = tools::evaluate;

ev::EvaluateOptions evaluate_options(const std::string& model, const py::dict& target, const std::string& labels,
                                     const std::string& preprocess, int batch, int workers, int worst,
                                     const std::string& out, const std::map<std::string, double>& thresholds) {
  ev::EvaluateOptions o;
  o.model = model;
  o.target = session_options(target);
  o.golden = ev::golden_options_for(o.target);
  o.labels = labels;
  o.preprocess = preprocess;
  o.batch = batch;
  o.workers = workers;
  o.worst = worst;
  o.out_dir = out;
  o.thresholds = compare_thresholds(thresholds);
  return o;
}

std::pair<std::string, std::string> finish_report(ev::EvaluateReport rep) {
  check(ev::write_report_files(rep));
  return {ev::report_to_json(rep).dump(), ev::format_report(rep)};
}

std::pair<std::string, std::string> evaluate_path(const std::string& model, const std::string& data,
                                                  const py::dict& target, const std::string& labels,
                                                  const std::string& preprocess, int batch, int workers, int worst,
                                                  const std::string& shard, const std::string& out,
                                                  const std::map<std::string, double>& thresholds) {
  ev::EvaluateOptions o = evaluate_options(model, target, labels, preprocess, batch, workers, worst, out, thresholds);
  o.data = data;
  if (!shard.empty()) std::tie(o.shard_index, o.shard_count) = unwrap(ev::parse_shard(shard));
  auto r = [&] {
    py::gil_scoped_release nogil;
    return ev::run_evaluate(o);
  }();
  return finish_report(unwrap(std::move(r)));
}

std::pair<std::string, std::string> merge(const std::vector<std::string>& files, const std::string& out) {
  ev::EvaluateReport rep = unwrap(ev::merge_reports(files));
  rep.out_dir = out;
  return finish_report(std::move(rep));
}

py::list list_samples(const std::string& src, const std::string& labels) {
  ev::DataSet ds = unwrap(ev::list_samples(src, labels));
  py::list out;
  for (auto& s : ds.samples) out.append(py::make_tuple(s.id, s.path, s.label ? py::object(py::int_(*s.label)) : py::none()));
  return out;
}

// An image file as ferry's host preprocessing makes it: the model's input tensor, or with `uint8_image` the
// resized and cropped 8-bit image [1, H, W, 3] that a model compiled with --preprocess takes.
py::object preprocess_image(const std::string& path, const std::string& spec, bool uint8_image) {
  ev::PreprocessSpec s = unwrap(ev::parse_preprocess(spec));
  auto t = [&]() -> Result<Tensor> {
    py::gil_scoped_release nogil;
    FERRY_ASSIGN_OR_RETURN(ev::Image img, ev::decode_image(path));
    FERRY_ASSIGN_OR_RETURN(ev::Image geo, ev::apply_geometry(img, s, path));
    return uint8_image ? ev::image_to_uint8_nhwc(geo) : ev::image_to_tensor(geo, s);
  }();
  return array_from_tensor(unwrap(std::move(t)));
}

// One evaluation fed from Python: samples as arrays (iterables, DataLoaders) or as files (Ray actors);
// or, on a Ray driver, results the actors computed.
class PyEvaluation {
 public:
  PyEvaluation(const std::string& model, const py::dict& target, const std::string& labels,
               const std::string& preprocess, int batch, int worst, const std::string& out,
               const std::map<std::string, double>& thresholds, const std::string& data, int64_t dataset_samples) {
    ev::EvaluateOptions o = evaluate_options(model, target, labels, preprocess, batch, 0, worst, out, thresholds);
    auto e = [&] {
      py::gil_scoped_release nogil;
      return ev::Evaluation::start(o, data, dataset_samples);
    }();
    ev_ = unwrap(std::move(e));
  }

  py::list inputs() const {
    py::list out;
    for (auto& in : ev_->inputs()) out.append(py::make_tuple(in.name, std::string(dtype_name(in.dtype)), in.dims));
    return out;
  }
  int chunk() const { return ev_->evaluator().chunk(); }

  // Samples (each a dict of arrays, batch dim optional) with their ids, paths, labels and indices; returns
  // each one's result as JSON text.
  std::vector<std::string> run(const py::list& samples, const std::vector<std::string>& ids,
                               const std::vector<std::string>& paths, const std::vector<std::optional<int64_t>>& labels,
                               const std::vector<int64_t>& indices) {
    std::vector<std::map<std::string, Tensor>> feeds;
    for (size_t i = 0; i < samples.size(); ++i) {
      std::map<std::string, Tensor> given;
      for (auto [k, v] : samples[i].cast<py::dict>()) {
        const std::string name = py::str(k);
        given[name] = tensor_from_array(name, v.cast<py::array>(), DType::kUndefined).clone();
      }
      feeds.push_back(unwrap(ev::fit_feeds(given, ev_->inputs(), "sample " + ids.at(i))));
    }
    return run_feeds(std::move(feeds), ids, paths, labels, indices);
  }

  // Samples as files (decoded and preprocessed here, without the GIL).
  std::vector<std::string> run_files(const std::vector<std::string>& ids, const std::vector<std::string>& paths,
                                     const std::vector<std::optional<int64_t>>& labels,
                                     const std::vector<int64_t>& indices) {
    std::vector<std::map<std::string, Tensor>> feeds;
    {
      py::gil_scoped_release nogil;
      for (size_t i = 0; i < paths.size(); ++i) {
        auto ref = ev::sample_ref(ids.at(i), paths[i], labels.at(i));
        if (!ref.ok()) {
          py::gil_scoped_acquire gil;
          raise_status(ref.status());
        }
        auto f = ev::load_sample(*ref, ev_->inputs(), ev_->preprocess() ? &*ev_->preprocess() : nullptr);
        if (!f.ok()) {
          py::gil_scoped_acquire gil;
          raise_status(f.status());
        }
        feeds.push_back(std::move(*f));
      }
    }
    return run_feeds(std::move(feeds), ids, paths, labels, indices);
  }

  void add_results(const std::vector<std::string>& results) {
    for (const auto& text : results) {
      auto j = nlohmann::json::parse(text, nullptr, false);
      check(ev_->add_result(unwrap(ev::sample_from_json(j, "a worker's result"))));
    }
  }

  void add_time(double data_wait_s, double data_work_s, double golden_s, double target_s, double wall_s) {
    ev::Timing& t = ev_->timing();
    t.data_wait_s += data_wait_s;
    t.data_work_s += data_work_s;
    t.golden_s += golden_s;
    t.target_s += target_s;
    t.wall_s = wall_s + t.open_s;  // Python's clock starts once the model is open
  }
  std::pair<double, double> session_seconds() const {
    return {ev_->evaluator().golden_seconds(), ev_->evaluator().target_seconds()};
  }
  void note(const std::string& n) { ev_->notes().push_back(n); }

  std::pair<std::string, std::string> finish() {
    auto r = [&] {
      py::gil_scoped_release nogil;
      return ev_->finish();
    }();
    return finish_report(unwrap(std::move(r)));
  }

 private:
  std::vector<std::string> run_feeds(std::vector<std::map<std::string, Tensor>> feeds, const std::vector<std::string>& ids,
                                     const std::vector<std::string>& paths,
                                     const std::vector<std::optional<int64_t>>& labels,
                                     const std::vector<int64_t>& indices) {
    if (ids.size() != feeds.size() || paths.size() != feeds.size() || labels.size() != feeds.size() ||
        indices.size() != feeds.size())
      raise_status(Status::invalid("evaluate: one id, path, label and index per sample"));
    std::vector<ev::SampleRef> refs;
    for (size_t i = 0; i < feeds.size(); ++i)
      refs.push_back({ids[i], paths[i], ev::SampleKind::kNpy, labels[i]});
    auto r = [&] {
      py::gil_scoped_release nogil;
      return ev_->run(std::move(feeds), refs, indices);
    }();
    std::vector<std::string> out;
    for (auto& s : unwrap(std::move(r))) out.push_back(ev::to_json(s).dump());
    return out;
  }

  std::unique_ptr<ev::Evaluation> ev_;
};

}  // namespace

void register_evaluate(py::module_& m) {
  m.def("_evaluate", &evaluate_path, py::arg("model"), py::arg("data"), py::arg("target"), py::arg("labels"),
        py::arg("preprocess"), py::arg("batch"), py::arg("workers"), py::arg("worst"), py::arg("shard"),
        py::arg("out"), py::arg("thresholds"));
  m.def("_merge_evaluations", &merge, py::arg("files"), py::arg("out"));
  m.def("_list_samples", &list_samples, py::arg("data"), py::arg("labels") = "");
  m.def("_preprocess_image", &preprocess_image, py::arg("path"), py::arg("spec"), py::arg("uint8_image"));
  py::class_<PyEvaluation>(m, "_Evaluation")
      .def(py::init<const std::string&, const py::dict&, const std::string&, const std::string&, int, int,
                    const std::string&, const std::map<std::string, double>&, const std::string&, int64_t>(),
           py::arg("model"), py::arg("target"), py::arg("labels"), py::arg("preprocess"), py::arg("batch"),
           py::arg("worst"), py::arg("out"), py::arg("thresholds"), py::arg("data"), py::arg("dataset_samples"))
      .def("inputs", &PyEvaluation::inputs)
      .def("chunk", &PyEvaluation::chunk)
      .def("run", &PyEvaluation::run, py::arg("samples"), py::arg("ids"), py::arg("paths"), py::arg("labels"),
           py::arg("indices"))
      .def("run_files", &PyEvaluation::run_files, py::arg("ids"), py::arg("paths"), py::arg("labels"),
           py::arg("indices"))
      .def("add_results", &PyEvaluation::add_results, py::arg("results"))
      .def("add_time", &PyEvaluation::add_time)
      .def("session_seconds", &PyEvaluation::session_seconds)
      .def("note", &PyEvaluation::note)
      .def("finish", &PyEvaluation::finish);
}

}  // namespace ferry::python
