// pld's exception family in Python: pld.Error and its subclasses carry the C++ classes' names
// and messages. pld.RankError adds .rank, .cause (pld.RankFailure), .kernel and .traceback (the
// rank's Python traceback text when a Python kernel raised).
#include "bindings.h"

#include "errors.h"

#include <pld/error.hpp>

namespace pld::python {

void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    namespace d = py::detail;
    if (d::apply_exception_translators(d::get_local_internals().registered_exception_translators)) return;
    if (d::apply_exception_translators(d::get_internals().registered_exception_translators)) return;
    PyErr_SetString(PyExc_SystemError, "pld: an exception escaped every translator");
  }
}

namespace {

struct Classes {
  py::handle error, usage, timeout, aborted, rank;
};
Classes g_classes;

py::handle new_class(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  const std::string qualified = std::string("pld.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

/// The text between `open` and `close` in `message`, or None.
py::object between(const std::string& message, const std::string& open, const std::string& close) {
  const auto at = message.find(open);
  if (at == std::string::npos) return py::none();
  const auto start = at + open.size();
  const auto end = close.empty() ? message.size() : message.find(close, start);
  if (end == std::string::npos) return py::none();
  return py::str(message.substr(start, end - start));
}

void set_rank_error(const RankError& e) {
  py::object exc = g_classes.rank(e.what());
  exc.attr("rank") = e.rank();
  exc.attr("cause") = py::cast(e.cause());
  const std::string message = e.what();
  exc.attr("kernel") = between(message, kKernelMarker, "'");
  exc.attr("traceback") = between(message, kTracebackMarker, "");
  if (!exc.attr("traceback").is_none())
    exc.attr("traceback") = py::str(std::string(kTracebackMarker) + exc.attr("traceback").cast<std::string>());
  PyErr_SetObject(g_classes.rank.ptr(), exc.ptr());
}

}  // namespace

py::handle error_class(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage: return g_classes.usage;
    case ErrorKind::WaitTimeout: return g_classes.timeout;
    case ErrorKind::Aborted: return g_classes.aborted;
    case ErrorKind::Rank: return g_classes.rank;
    case ErrorKind::Error: break;
  }
  return g_classes.error;
}

void bind_errors(py::module_& m) {
  py::enum_<RankFailure>(m, "RankFailure", "Why a rank failed (pld.RankError.cause).")
      .value("KernelError", RankFailure::KernelError, "the kernel raised")
      .value("WaitTimeout", RankFailure::WaitTimeout, "a wait passed its deadline")
      .value("Crashed", RankFailure::Crashed, "the rank process was killed by a signal")
      .value("Exited", RankFailure::Exited, "the rank process exited while it still had work")
      .value("Startup", RankFailure::Startup, "the rank process could not be started");
  py::handle exception(PyExc_Exception);
  g_classes.error = new_class(m, "Error", "Root of every exception pld raises.", py::make_tuple(exception));
  g_classes.usage = new_class(m, "UsageError",
                              "Bad input or misuse of the API; the message names the operation, the value and the fix.",
                              py::make_tuple(g_classes.error, py::handle(PyExc_ValueError)));
  g_classes.timeout = new_class(m, "WaitTimeoutError", "A wait passed its deadline (PLD_WAIT_TIMEOUT).",
                                py::make_tuple(g_classes.error, py::handle(PyExc_TimeoutError)));
  g_classes.aborted =
      new_class(m, "AbortedError", "A wait was released because another rank failed.", py::make_tuple(g_classes.error));
  g_classes.rank = new_class(m, "RankError",
                             "A failure on a rank: .rank (world rank), .cause (pld.RankFailure), .kernel (the "
                             "Python kernel's name or None) and .traceback (the rank's Python traceback or None).",
                             py::make_tuple(g_classes.error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      std::rethrow_exception(p);
    } catch (const RankError& e) {
      set_rank_error(e);
    } catch (const UsageError& e) {
      PyErr_SetString(g_classes.usage.ptr(), e.what());
    } catch (const WaitTimeoutError& e) {
      PyErr_SetString(g_classes.timeout.ptr(), e.what());
    } catch (const AbortedError& e) {
      PyErr_SetString(g_classes.aborted.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_classes.error.ptr(), e.what());
    }
  });
}

}  // namespace pld::python
