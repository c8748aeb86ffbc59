// ferry.weights / ferry.torch.audit / ferry.mindspore.convert: checkpoints read by the C++ readers (no
// pickled code is ever run), audited against a model file or a parameter list the Python side builds
// (a live nn.Module's state_dict, a MindSpore network's parameters). Reports cross as the CLI's JSON.
#include <pybind11/stl.h>

#include "bindings.h"
#include "tools/refit.h"
#include "tools/weights.h"
#include "weights/audit.h"
#include "weights/checkpoint.h"
#include "weights/mindspore.h"

namespace ferry::python {
namespace {

using ParamTuple = std::tuple<std::string, std::optional<std::vector<int64_t>>, std::optional<std::string>, std::string>;

std::vector<weights::ExpectedParam> expected_from(const std::vector<ParamTuple>& params) {
  std::vector<weights::ExpectedParam> out;
  for (const auto& [key, dims, dtype, cls] : params) {
    weights::ExpectedParam p;
    p.key = key;
    if (dims) {
      p.has_dims = true;
      p.dims = *dims;
    }
    if (dtype) {
      auto dt = dtype_from_name(*dtype);
      if (!dt) raise_status(Status::invalid("parameter '" + key + "': unknown dtype '" + *dtype + "'"));
      p.dtype = *dt;
    }
    p.module_class = cls;
    out.push_back(std::move(p));
  }
  return out;
}

weights::Checkpoint read(const std::string& path) {
  Result<weights::Checkpoint> r = Status::internal("not run");
  {
    py::gil_scoped_release nogil;
    r = weights::read_checkpoint(path);
  }
  return unwrap(std::move(r));
}

// {key: array} in file order, plus what the reader saw: (format, container, other entries, notes).
py::tuple read_checkpoint_py(const std::string& path) {
  weights::Checkpoint ck = read(path);
  py::dict tensors;
  for (const auto& t : ck.tensors) tensors[py::str(t.key)] = array_from_tensor(t.value);
  return py::make_tuple(tensors, ck.format, ck.container, ck.other, ck.notes);
}

// (JSON, text): the CLI's --json and its printed report.
py::tuple audit_report(const weights::AuditReport& r) {
  return py::make_tuple(weights::audit_to_json(r).dump(), weights::audit_to_text(r));
}

py::tuple audit_params(const std::string& checkpoint, const std::vector<ParamTuple>& params) {
  weights::Checkpoint ck = read(checkpoint);
  return audit_report(weights::audit_checkpoint(ck, expected_from(params)));
}

py::tuple audit_model(const std::string& model, const std::string& checkpoint) {
  Result<weights::AuditReport> r = Status::internal("not run");
  {
    py::gil_scoped_release nogil;
    r = tools::audit_weights(model, checkpoint);
  }
  return audit_report(unwrap(std::move(r)));
}

py::tuple convert_mindspore(const std::string& checkpoint, const std::vector<ParamTuple>& params,
                                   const std::string& output) {
  weights::Checkpoint ck = read(checkpoint);
  weights::Conversion c = unwrap(weights::convert_to_mindspore(ck, expected_from(params)));
  c.audit.checkpoint = output;
  check(weights::write_mindspore_ckpt(output, c.tensors));
  return py::make_tuple(tools::conversion_to_json(c, output).dump(), tools::conversion_to_text(c, output));
}

py::tuple refit(const std::string& model, const std::string& checkpoint, const std::string& output) {
  tools::RefitRequest req;
  req.model = model;
  req.checkpoint = checkpoint;
  req.output = output;
  Result<tools::RefitReport> r = Status::internal("not run");
  {
    py::gil_scoped_release nogil;
    r = tools::refit_model(req);
  }
  tools::RefitReport rep = unwrap(std::move(r));
  return py::make_tuple(tools::refit_to_json(rep).dump(), tools::refit_to_text(rep));
}

}  // namespace

void register_weights(py::module_& m) {
  m.def("_read_checkpoint", &read_checkpoint_py, py::arg("path"));
  m.def("_audit_params", &audit_params, py::arg("checkpoint"), py::arg("params"));
  m.def("_audit_model", &audit_model, py::arg("model"), py::arg("checkpoint"));
  m.def("_refit", &refit, py::arg("model"), py::arg("checkpoint"), py::arg("output"));
  m.def("_convert_mindspore", &convert_mindspore, py::arg("checkpoint"), py::arg("params"), py::arg("output"));
}

}  // namespace ferry::python
