// ferry.Error and its subclasses: every Status code gets one, so Python callers can catch what they
// expect (a bad argument, an unsupported model, an unreadable file) while `except ferry.Error` catches
// all. The message is the CLI's, context lines included ("while importing node 'Conv_12': ...").
#include <pybind11/pybind11.h>

#include "bindings.h"

namespace ferry::python {
namespace {

// Set once at import; pybind11 keeps the type objects alive for the module's lifetime.
PyObject* g_error = nullptr;
PyObject* g_invalid = nullptr;
PyObject* g_unsupported = nullptr;
PyObject* g_io = nullptr;
PyObject* g_out_of_range = nullptr;
PyObject* g_internal = nullptr;

PyObject* make(py::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string qualified = std::string("ferry.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!t) throw py::error_already_set();
  m.add_object(name, py::handle(t));
  return t;
}

}  // namespace

void register_errors(py::module_& m) {
  g_error = make(m, "Error", PyExc_Exception, "Base class of every error ferry raises; str() is the CLI's message.");
  PyObject* value_base = PyTuple_Pack(2, g_error, PyExc_ValueError);
  g_invalid = make(m, "InvalidArgument", value_base,
                   "A bad argument, model or input: the message names the file, node, tensor or option.");
  Py_DECREF(value_base);
  g_unsupported = make(m, "NotSupported", g_error, "The model uses something ferry (or the target) does not support.");
  PyObject* io_base = PyTuple_Pack(2, g_error, PyExc_OSError);
  g_io = make(m, "IOError", io_base, "A file could not be read or written.");
  Py_DECREF(io_base);
  PyObject* range_base = PyTuple_Pack(2, g_error, PyExc_IndexError);
  g_out_of_range = make(m, "OutOfRange", range_base, "An index or size outside what the model or ferry allows.");
  Py_DECREF(range_base);
  g_internal = make(m, "InternalError", g_error, "A bug in ferry: please report it with the message.");
}

void raise_status(const Status& st) {
  PyObject* type = g_error;
  switch (st.code()) {
    case ErrorCode::kInvalidArgument: type = g_invalid; break;
    case ErrorCode::kNotSupported: type = g_unsupported; break;
    case ErrorCode::kIO: type = g_io; break;
    case ErrorCode::kOutOfRange: type = g_out_of_range; break;
    case ErrorCode::kInternal: type = g_internal; break;
    case ErrorCode::kOk: break;
  }
  PyErr_SetString(type, st.to_string().c_str());
  throw py::error_already_set();
}

}  // namespace ferry::python
