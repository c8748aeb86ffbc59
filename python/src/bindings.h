// The pieces of the extension module ferry._ferry, one file each: errors (Status -> ferry.Error
// subclasses), arrays (numpy <-> ferry::Tensor), the Session class, and the tools (check, compile,
// compare, bench) whose reports cross as the CLI's JSON text.
#pragma once
#include <map>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/status.h"
#include "core/tensor.h"
#include "runtime/session.h"
#include "tools/compare/metrics.h"

namespace ferry::python {

namespace py = pybind11;

// Registers ferry.Error and its subclasses on `m`.
void register_errors(py::module_& m);
// Raises the ferry.Error subclass for `st`'s code with the CLI's message (Status::to_string).
[[noreturn]] void raise_status(const Status& st);
inline void check(const Status& st) {
  if (!st.ok()) raise_status(st);
}
template <class T>
T unwrap(Result<T> r) {
  if (!r.ok()) raise_status(r.status());
  return std::move(r).value();
}

// A numpy array as a Tensor for input `name` of dtype `want` (kUndefined: the array's own). No copy when
// the array is C-contiguous, of that dtype and 64-byte aligned (ferry's tensors are): the tensor then
// keeps the array alive. Otherwise one copy; a dtype that differs is an error naming the input.
Tensor tensor_from_array(const std::string& name, const py::array& a, DType want);
// A Tensor as a numpy array sharing its buffer (the array keeps the tensor's storage alive). bfloat16
// arrives as ml_dtypes.bfloat16 when ml_dtypes is installed, else as float32.
py::object array_from_tensor(const Tensor& t);
// A runtime value: an array, a list of arrays (sequence) or None (empty optional).
py::object object_from_value(const RtValue& v);
// ORT's type string: "tensor(float)", "tensor(int64)".
std::string ort_type_name(DType t);

// SessionOptions from ferry.Session's keyword arguments (session.py documents them); the CLI's defaults
// (cpu backend, opt level 2) where one is not given. Unknown keys and bad values raise InvalidArgument.
runtime::SessionOptions session_options(const py::dict& options);

// compare's thresholds from a dict (cosine, rel_euclid, atol, rtol); other keys raise InvalidArgument.
tools::compare::Thresholds compare_thresholds(const std::map<std::string, double>& given);

void register_session(py::module_& m);
void register_tools(py::module_& m);
void register_weights(py::module_& m);
void register_evaluate(py::module_& m);

}  // namespace ferry::python
