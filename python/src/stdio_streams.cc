// The rank processes' Python output streams (stdio_streams.h).
#include "stdio_streams.h"

#include <pybind11/pybind11.h>

namespace pld::python {

namespace py = pybind11;

namespace {

// Interned names and the sys module, kept for the process's life: a kernel's end costs two
// attribute reads, not lookups of names made anew.
struct Names {
  PyObject* sys = py::module_::import("sys").release().ptr();
  PyObject* streams[2] = {PyUnicode_InternFromString("stdout"), PyUnicode_InternFromString("stderr")};
  PyObject* flush = PyUnicode_InternFromString("flush");
};

const Names& names() {
  static const Names* n = new Names();
  return *n;
}

// The streams line_buffer_rank_stdio reconfigured (strong references), or null.
PyObject* g_line_buffered[2] = {nullptr, nullptr};

void flush_stream(PyObject* stream) {
  PyObject* done = PyObject_CallMethodNoArgs(stream, names().flush);
  if (done)
    Py_DECREF(done);
  else
    PyErr_Clear();
}

void flush_streams(bool skip_line_buffered) {
  const Names& n = names();
  for (int i = 0; i < 2; ++i) {
    PyObject* stream = PyObject_GetAttr(n.sys, n.streams[i]);
    if (!stream) {
      PyErr_Clear();
      continue;
    }
    if (stream != Py_None && !(skip_line_buffered && stream == g_line_buffered[i])) flush_stream(stream);
    Py_DECREF(stream);
  }
}

}  // namespace

void flush_stdio() {
  flush_streams(false);
}

void flush_kernel_stdio() {
  flush_streams(true);
}

void line_buffer_rank_stdio() {
  const Names& n = names();
  try {
    const py::handle text_io = py::module_::import("io").attr("TextIOWrapper");
    for (int i = 0; i < 2; ++i) {
      const py::object stream = py::reinterpret_steal<py::object>(PyObject_GetAttr(n.sys, n.streams[i]));
      if (!stream || !py::isinstance(stream, text_io)) {
        PyErr_Clear();
        continue;
      }
      stream.attr("reconfigure")(py::arg("line_buffering") = true, py::arg("write_through") = true);
      g_line_buffered[i] = stream.inc_ref().ptr();
    }
  } catch (py::error_already_set&) {
    // a stream that cannot be reconfigured is flushed after every kernel instead
  }
  PyErr_Clear();
}

}  // namespace pld::python
