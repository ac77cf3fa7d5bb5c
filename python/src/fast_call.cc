// CallArgs: Python's own binding of a call's arguments to a def's parameters, for the fast entry
// points (fast_call.h).
#include "fast_call.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <string>

namespace pld::python {

namespace {

/// "broadcast(target, signal, *, root, core_num)": the call's parameters, for binding errors.
std::string signature_text(const FastSignature& sig) {
  std::string s = fmt::format("{}(", python_name(sig.api));
  for (std::size_t i = 0; i < sig.count; ++i) {
    if (i) s += ", ";
    if (i == sig.positional) s += "*, ";
    s += sig.names[i];
  }
  return s + ")";
}

/// The parameter named by keyword `name`, or sig.count.
std::size_t parameter_of(const FastSignature& sig, PyObject* name) {
  for (std::size_t i = 0; i < sig.count; ++i) {
    if (PyUnicode_CompareWithASCIIString(name, sig.names[i]) == 0) return i;
  }
  return sig.count;
}

}  // namespace

CallArgs::CallArgs(const FastSignature& sig, PyObject* const* argv, Py_ssize_t nargsf, PyObject* kwnames) : sig_(sig) {
  const auto given = static_cast<std::size_t>(PyVectorcall_NARGS(nargsf));
  if (given > sig.positional)
    fail(fmt::format("takes at most {} positional argument(s) ({} given)", sig.positional, given));
  for (std::size_t i = 0; i < given; ++i) values_[i] = argv[i];
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    const std::size_t i = parameter_of(sig, name);
    if (i == sig.count) fail(fmt::format("got an unexpected keyword argument '{}'", PyUnicode_AsUTF8(name)));
    if (values_[i]) fail(fmt::format("got multiple values for argument '{}'", sig.names[i]));
    values_[i] = argv[given + static_cast<std::size_t>(k)];
  }
  for (std::size_t i = 0; i < sig.required; ++i) require(i);
}

void CallArgs::require(std::size_t i) const {
  if (!values_[i]) fail(fmt::format("missing required argument '{}'", sig_.names[i]));
}

void CallArgs::fail(const std::string& what) const {
  throw py::type_error(fmt::format("{}() {}; the call is {}", python_name(sig_.api), what, signature_text(sig_)));
}

int CallArgs::int_or(std::size_t i, int fallback) const {
  PyObject* v = values_[i];
  if (!v) return fallback;
  if (!PyIndex_Check(v) || PyBool_Check(v))
    throw UsageError(fmt::format("{}: {} is a {}; pass an int", sig_.api, sig_.names[i], type_name(v)));
  int overflow = 0;
  long n = 0;
  if (PyLong_CheckExact(v)) {
    n = PyLong_AsLongAndOverflow(v, &overflow);
  } else {
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(v));  // numpy integers
    if (!index) throw py::error_already_set();
    n = PyLong_AsLongAndOverflow(index.ptr(), &overflow);
  }
  if (overflow || n < INT_MIN || n > INT_MAX)
    throw UsageError(fmt::format("{}: {} = {} does not fit an int; pass a value in [{}, {}]", sig_.api, sig_.names[i],
                                 py::repr(v).cast<std::string>(), INT_MIN, INT_MAX));
  return static_cast<int>(n);
}

bool CallArgs::bool_or(std::size_t i, bool fallback) const {
  PyObject* v = values_[i];
  if (!v) return fallback;
  if (v == Py_True) return true;
  if (v == Py_False) return false;
  throw UsageError(fmt::format("{}: {} is a {}; pass True or False", sig_.api, sig_.names[i], type_name(v)));
}

void add_fast_functions(py::module_& m, PyMethodDef* defs, std::size_t n) {
  const py::str module_name = m.attr("__name__");
  for (std::size_t i = 0; i < n; ++i) {
    PyObject* f = PyCFunction_NewEx(&defs[i], nullptr, module_name.ptr());
    if (!f) throw py::error_already_set();
    m.add_object(defs[i].ml_name, py::reinterpret_steal<py::object>(f));
  }
}

}  // namespace pld::python
