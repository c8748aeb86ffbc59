// ferry._ferry._Session: runtime::ModelSession for Python. The Python class ferry.Session (session.py)
// wraps it with onnxruntime.InferenceSession's names; this layer converts options, arrays and errors,
// and releases the GIL while a model runs so other Python threads go on (runs of one session are
// serialized, as Session::run documents).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>

#include "backends/backend_options.h"
#include "core/byte_size.h"
#include "bindings.h"
#include "passes/precision.h"
#include "runtime/model_session.h"

namespace ferry::python {

runtime::SessionOptions session_options(const py::dict& o) {
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.opt_level = 2;  // the CLI's default: the library's is 0
  for (auto [key_handle, value] : o) {
    std::string key = py::str(key_handle);
    if (value.is_none()) continue;
    if (key == "backend") {
      so.backend = py::str(value);
      if (so.backend != "cpu" && so.backend != "reference")
        raise_status(Status::invalid("backend '" + so.backend + "': expected 'cpu' or 'reference'"));
    } else if (key == "opt_level") {
      so.opt_level = value.cast<int>();
      if (so.opt_level < 0 || so.opt_level > 3) raise_status(Status::invalid("opt_level must be 0..3"));
    } else if (key == "threads") {
      so.backend_options.threads = value.cast<int>();
      if (so.backend_options.threads < 1) raise_status(Status::invalid("threads must be at least 1"));
    } else if (key == "precision") {
      so.precision.mode = unwrap(passes::parse_precision(py::str(value)));
      so.precision_given = true;
    } else if (key == "target") {
      so.target = py::str(value);
    } else if (key == "keep_fp32") {
      so.precision.keep_fp32 = value.cast<std::vector<std::string>>();
    } else if (key == "keep_io_types") {
      so.precision.keep_io_types = value.cast<bool>();
    } else if (key == "shapes") {
      so.input_shapes = value.cast<std::map<std::string, std::vector<int64_t>>>();
    } else if (key == "cpu") {
      so.backend_options.cpu = unwrap(backends::parse_cpu_options(py::str(value)));
    } else if (key == "memory_arena") {
      so.memory_arena = value.cast<bool>();
    } else if (key == "allow_newer_opset") {
      so.allow_newer_opset = value.cast<bool>();
    } else if (key == "max_memory") {  // bytes, or a size as the CLI's --max-memory takes it ("8G")
      if (py::isinstance<py::str>(value)) {
        so.max_memory = unwrap(parse_byte_size(py::str(value)));
      } else {
        so.max_memory = value.cast<int64_t>();
        if (so.max_memory < 1) raise_status(Status::invalid("max_memory must be at least 1 byte"));
      }
    } else {
      raise_status(Status::invalid("unknown session option '" + key + "'"));
    }
  }
  return so;
}

namespace {

py::list shape_list(const std::optional<Shape>& shape) {
  py::list l;
  if (!shape) return l;
  for (const Dim& d : *shape) {
    if (d.is_static()) l.append(d.value);
    else if (!d.symbol.empty()) l.append(d.symbol);
    else l.append(py::none());
  }
  return l;
}

py::list describe_values(const std::vector<runtime::InputInfo>& values) {
  py::list l;
  for (const auto& v : values)
    l.append(py::make_tuple(v.name, shape_list(v.shape), ort_type_name(v.dtype), std::string(dtype_name(v.dtype))));
  return l;
}

class PySession {
 public:
  PySession(const std::string& path, const py::dict& options) {
    runtime::SessionOptions so = session_options(options);
    auto opened = [&] {
      py::gil_scoped_release nogil;
      return runtime::ModelSession::open(path, so);
    }();
    session_ = unwrap(std::move(opened));
    for (const auto& in : session_->inputs()) input_types_[in.name] = in.dtype;
  }

  py::list inputs() const { return describe_values(session_->inputs()); }
  py::list outputs() const { return describe_values(session_->outputs()); }

  // All outputs, or those named, in the order asked.
  py::list run(const py::dict& feeds, const std::optional<std::vector<std::string>>& names) {
    auto inputs = to_inputs(feeds);
    auto outputs = run_locked(inputs, nullptr);
    return select(outputs, names);
  }

  // run() that calls `callback(onnx_tensor_name, array)` for every value with an ONNX name as it is
  // computed (fused nodes' outputs carry their last covered node's output name).
  py::list run_layers(const py::dict& feeds, const py::function& callback,
                      const std::optional<std::vector<std::string>>& names) {
    auto inputs = to_inputs(feeds);
    std::optional<py::error_already_set> raised;
    runtime::NodeHook hook = [&](const ir::Node& node, const std::vector<const RtValue*>&,
                                 const std::vector<RtValue>& outs) {
      py::gil_scoped_acquire gil;
      if (raised) return;  // the callback failed: skip the rest, raise after the run
      try {
        for (size_t i = 0; i < outs.size() && i < node.outputs.size(); ++i) {
          const ir::Value* v = node.outputs[i];
          if (!v || v->onnx_name.empty() || !outs[i].is_tensor()) continue;
          callback(v->onnx_name, array_from_tensor(outs[i].tensor));
        }
      } catch (py::error_already_set& e) {
        raised = std::move(e);
      }
    };
    auto outputs = run_locked(inputs, &hook);
    if (raised) throw *raised;
    return select(outputs, names);
  }

  py::dict info() const {
    const runtime::Session& s = session_->session();
    py::dict d;
    d["target"] = s.target_label();
    d["precision"] = s.precision_description();
    d["backend"] = s.options().backend;
    d["opt_level"] = s.options().opt_level;
    d["kernel_choices"] = s.kernel_choices();
    d["gears"] = session_->gears();
    d["file_kind"] = session_->kind() == runtime::ModelFileKind::kFerry ? "ferry" : "onnx";
    d["host_nodes"] = s.prepare_report().host_nodes;
    d["kept_fp32"] = s.precision_report().kept;
    d["unmatched_keep_fp32"] = s.precision_report().unmatched;
    d["low_precision_nodes"] = s.precision_report().low_nodes;
    return d;
  }

 private:
  std::map<std::string, RtValue> to_inputs(const py::dict& feeds) const {
    std::map<std::string, RtValue> inputs;
    for (auto [key, value] : feeds) {
      std::string name = py::str(key);
      auto it = input_types_.find(name);
      DType want = it == input_types_.end() ? DType::kUndefined : it->second;  // unknown: run() names it
      py::array a = py::array::ensure(value);
      if (!a) raise_status(Status::invalid("input '" + name + "' is not an array (got " +
                                           std::string(py::str(py::type::of(value))) + ")"));
      inputs[name] = RtValue(tensor_from_array(name, a, want));
    }
    return inputs;
  }

  std::vector<std::pair<std::string, RtValue>> run_locked(const std::map<std::string, RtValue>& inputs,
                                                           const runtime::NodeHook* hook) {
    Result<std::vector<std::pair<std::string, RtValue>>> r = Status::internal("not run");
    {
      py::gil_scoped_release nogil;  // before the lock: a hook needs the GIL while the lock is held
      std::lock_guard<std::mutex> lock(mutex_);
      session_->set_node_hook(hook ? *hook : runtime::NodeHook{});
      r = session_->run(inputs);
      session_->set_node_hook(runtime::NodeHook{});
    }
    return unwrap(std::move(r));
  }

  static py::list select(const std::vector<std::pair<std::string, RtValue>>& outputs,
                         const std::optional<std::vector<std::string>>& names) {
    py::list l;
    if (!names || names->empty()) {
      for (const auto& [n, v] : outputs) l.append(object_from_value(v));
      return l;
    }
    for (const std::string& want : *names) {
      auto it = std::find_if(outputs.begin(), outputs.end(), [&](const auto& o) { return o.first == want; });
      if (it == outputs.end()) raise_status(Status::invalid("the model has no output '" + want + "'"));
      l.append(object_from_value(it->second));
    }
    return l;
  }

  std::unique_ptr<runtime::ModelSession> session_;
  std::map<std::string, DType> input_types_;
  std::mutex mutex_;
};

}  // namespace

void register_session(py::module_& m) {
  py::class_<PySession>(m, "_Session")
      .def(py::init<const std::string&, const py::dict&>(), py::arg("path"), py::arg("options"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("run", &PySession::run, py::arg("feeds"), py::arg("output_names") = py::none())
      .def("run_layers", &PySession::run_layers, py::arg("feeds"), py::arg("callback"),
           py::arg("output_names") = py::none())
      .def("info", &PySession::info);
}

}  // namespace ferry::python
