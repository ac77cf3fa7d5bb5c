// Entry points against the C API's vectorcall convention (METH_FASTCALL | METH_KEYWORDS), for the
// calls a kernel makes in its loops: pybind11's generic dispatcher copies the arguments into a
// tuple, a keyword argument into a dict, and tries every overload, which costs more than a small
// collective itself. A FastSignature names an entry's parameters once; CallArgs binds a call's
// positional and keyword arguments to them the way Python binds a def's, and the entry's body
// reads them by index.
#pragma once

#include "bindings.h"
#include "errors.h"

#include <array>
#include <cstddef>

namespace pld::python {

inline constexpr std::size_t kMaxFastParams = 16;

/// The parameter list of a fast entry point: `names` in order, the first `positional` of them may
/// be given positionally, the first `required` must be given.
struct FastSignature {
  const char* api;  // the function's name in messages ("broadcast", "tensor::put"); Python's after "::"
  std::array<const char*, kMaxFastParams> names;
  std::size_t count;
  std::size_t positional;
  std::size_t required;
};

/// One call's arguments bound to a FastSignature. A missing optional argument reads as a null
/// handle. Binding errors raise TypeError (as a def's would), naming the call's parameters.
class CallArgs {
 public:
  CallArgs(const FastSignature& sig, PyObject* const* argv, Py_ssize_t nargsf, PyObject* kwnames);
  py::handle operator[](std::size_t i) const { return values_[i]; }
  /// Argument i as an int (anything with __index__), or `fallback` when it is not given.
  int int_or(std::size_t i, int fallback) const;
  /// Raises the TypeError of a missing argument when argument i is not given.
  void require(std::size_t i) const;
  /// Required argument i as an int.
  int integer(std::size_t i) const { return int_or(i, 0); }
  /// Argument i as a bool (True or False), or `fallback` when it is not given.
  bool bool_or(std::size_t i, bool fallback) const;
  /// Argument i as the pybind11-bound enum E, or `fallback` when it is not given.
  template <class E>
  E enum_or(std::size_t i, E fallback) const {
    return values_[i] ? enum_of<E>(values_[i], sig_.api, sig_.names[i]) : fallback;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  const FastSignature& sig_;
  std::array<PyObject*, kMaxFastParams> values_{};
};

/// The entry point `Body` (py::object(const CallArgs&)) with signature `Sig`, as a C function of
/// the vectorcall convention: C++ exceptions become the Python errors pybind11 would raise.
template <const FastSignature& Sig, py::object (*Body)(const CallArgs&)>
PyObject* fast_entry(PyObject* /*module*/, PyObject* const* argv, Py_ssize_t nargsf, PyObject* kwnames) {
  try {
    return Body(CallArgs(Sig, argv, nargsf, kwnames)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// A C-API entry point of any calling convention as a PyMethodDef's ml_meth (the flags say which).
template <class F>
PyCFunction c_function(F* fn) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn));
}

/// The Python name of an entry point: `api` after its last "::".
constexpr const char* python_name(const char* api) {
  const char* name = api;
  for (const char* c = api; *c; ++c)
    if (c[0] == ':' && c[1] == ':') name = c + 2;
  return name;
}

/// A PyMethodDef of a fast entry point; `doc` starts with the signature line, followed by "--"
/// where every default is a literal (inspect.signature reads it then; help() shows it either way).
template <const FastSignature& Sig, py::object (*Body)(const CallArgs&)>
PyMethodDef fast_method(const char* doc) {
  return {python_name(Sig.api), c_function(&fast_entry<Sig, Body>), METH_FASTCALL | METH_KEYWORDS, doc};
}

/// Adds the functions of `defs` (static storage: Python keeps pointers to them) to module `m`.
void add_fast_functions(py::module_& m, PyMethodDef* defs, std::size_t n);

}  // namespace pld::python
