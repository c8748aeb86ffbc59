// The extension module ferry._ferry. Everything a user calls is in the Python package (python/ferry),
// which wraps these in documented, typed classes.
#include "bindings.h"

PYBIND11_MODULE(_ferry, m) {
  m.doc() = "ferry's C++ library (private: use the ferry package)";
  m.attr("__version__") = FERRY_VERSION;
  ferry::python::register_errors(m);
  ferry::python::register_session(m);
  ferry::python::register_tools(m);
  ferry::python::register_weights(m);
  ferry::python::register_evaluate(m);
}
