// pld.Host and pld.CommDomain: window buffers, views, comm domains, dispatch and host callbacks of
// one orchestrator call (the host builtin collectives: collectives.cc).
#include "host.h"

#include "errors.h"
#include "fast_call.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <limits>

namespace pld::python {

namespace {

/// alloc_window_buffer(nbytes[, name]) or alloc_window_buffer(shape, dtype[, name]).
WindowBuffer alloc(CommDomain& domain, py::handle size, py::handle dtype, std::string name) {
  const char* api = "alloc_window_buffer";
  if (py::isinstance<py::tuple>(size) || py::isinstance<py::list>(size)) {
    if (dtype.is_none())
      throw UsageError(
          "alloc_window_buffer: a shape needs a dtype; pass alloc_window_buffer(shape, dtype, name) "
          "or a byte count");
    return domain.alloc_window_buffer(dims_of(size, api, "shape"), dtype_of(dtype, api), name);
  }
  if (!PyIndex_Check(size.ptr()) || py::isinstance<py::bool_>(size))
    throw UsageError(
        fmt::format("alloc_window_buffer: size {} is not a byte count or a shape; pass nbytes (int) or a "
                    "shape and a dtype: alloc_window_buffer((n, 1), pld.DType.INT32, 'sig')",
                    py::repr(size).cast<std::string>()));
  if (py::isinstance<py::str>(dtype) && name.empty()) {
    name = dtype.cast<std::string>();  // alloc_window_buffer(nbytes, name)
  } else if (!dtype.is_none()) {
    throw UsageError(fmt::format(
        "alloc_window_buffer: nbytes {} with dtype {}; the byte form takes no dtype, the "
        "element form takes a shape tuple: alloc_window_buffer(({},), dtype)",
        py::repr(size).cast<std::string>(), py::repr(dtype).cast<std::string>(), py::repr(size).cast<std::string>()));
  }
  const auto bytes = py::reinterpret_steal<py::int_>(PyNumber_Index(size.ptr())).cast<long long>();
  if (bytes < 0)
    throw UsageError(fmt::format("alloc_window_buffer: nbytes {} is negative; pass a byte count >= 0", bytes));
  return domain.alloc_window_buffer(static_cast<std::uint64_t>(bytes), name);
}

Window view(const CommDomain& domain, const WindowBuffer& buffer, py::handle shape, py::handle dtype) {
  Window w;
  w.shape = dims_of(shape, "window", "shape");
  w.dtype = dtype_of(dtype, "window");
  w.ref = visit_dtype(w.dtype, [&](auto tag) { return domain.window<decltype(tag)>(buffer, w.shape).ref(); });
  return w;
}

/// Holds a callback's Python function and arguments; released under the GIL.
struct PyCallback {
  std::shared_ptr<py::object> fn;
  std::shared_ptr<py::tuple> args;
  void operator()() const {
    py::gil_scoped_acquire gil;
    (*fn)(**args);
  }
};

std::shared_ptr<py::object> gil_shared(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

const PyHost& host_of(PyObject* self) {
  const PyHost* exact = exact_instance<PyHost>(self);
  return exact ? *exact : py::handle(self).cast<const PyHost&>();
}

/// Host.world_size(), against the C API (METH_NOARGS): an orchestrator's loop bound.
PyObject* host_world_size(PyObject* self, PyObject* /*unused*/) {
  try {
    return PyLong_FromLong(host_of(self).get("Host.world_size").world_size());
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

/// Host.dispatch(rank, kernel, *args), against the C API (METH_FASTCALL): a worker loop records
/// one dispatch per rank per call, and pybind11's generic dispatcher costs more than the record.
PyObject* host_dispatch(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  try {
    if (argc < 2)
      throw UsageError(fmt::format("Host.dispatch: {} argument(s); pass dispatch(rank, kernel, *args)", argc));
    const PyHost& h = host_of(self);
    const py::handle rank(argv[0]);
    int overflow = 0;
    long r = 0;
    if (PyLong_CheckExact(rank.ptr())) {
      r = PyLong_AsLongAndOverflow(rank.ptr(), &overflow);
    } else {
      if (!PyIndex_Check(rank.ptr()) || PyBool_Check(rank.ptr()))
        throw UsageError(fmt::format("Host.dispatch: rank {} is not an int; pass dispatch(rank, kernel, *args)",
                                     py::repr(rank).cast<std::string>()));
      const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(rank.ptr()));  // numpy integers too
      if (!index) throw py::error_already_set();
      r = PyLong_AsLongAndOverflow(index.ptr(), &overflow);
    }
    Host& host = h.get("Host.dispatch");
    if (overflow || r < std::numeric_limits<int>::min() || r > std::numeric_limits<int>::max())
      throw UsageError(
          fmt::format("Host::dispatch: rank {} out of range [0, {}); ranks index DistributedConfig::device_ids",
                      py::repr(rank).cast<std::string>(), host.world_size()));
    record_python_dispatch(host, static_cast<int>(r), argv[1], argv + 2, static_cast<std::size_t>(argc - 2));
    Py_RETURN_NONE;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyMethodDef g_host_methods[] = {
    {"dispatch", c_function(&host_dispatch), METH_FASTCALL,
     "dispatch(rank, kernel, *args): runs the Python function kernel(*args) in rank's process. Arguments: window "
     "views, HostTensor slices, numbers, strings, enums, tuples and other picklable values."},
    {"world_size", &host_world_size, METH_NOARGS, "world_size()\n--\n\nNumber of ranks in the world."},
};

/// The methods an orchestrator calls per dispatch, against the C API (pybind11's dispatcher costs
/// more than the work).
void add_fast_methods(py::class_<PyHost>& host) {
  for (PyMethodDef& def : g_host_methods) {
    PyObject* method = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(host.ptr()), &def);
    if (!method) throw py::error_already_set();
    host.attr(def.ml_name) = py::reinterpret_steal<py::object>(method);
  }
}

void bind_domain(py::module_& m) {
  py::class_<PyDomain>(m, "CommDomain",
                       "A comm domain: a subset of the world's ranks with its own windows and signals (h.domain()).")
      .def(
          "size", [](const PyDomain& d) { return d.domain.size(); }, "Number of ranks in the domain.")
      .def(
          "ranks", [](const PyDomain& d) { return d.domain.ranks(); }, "World ranks of the members, ascending.")
      .def(
          "alloc_window_buffer",
          [](PyDomain& d, py::handle size, py::handle dtype, const std::string& name) {
            check_alive(d.alive, "CommDomain.alloc_window_buffer");
            return alloc(d.domain, size, dtype, name);
          },
          py::arg("size"), py::arg("dtype") = py::none(), py::arg("name") = "",
          "Reserves nbytes (or shape elements of dtype) at the same offset of every member's window.")
      .def(
          "window",
          [](const PyDomain& d, const WindowBuffer& b, py::handle shape, py::handle dtype) {
            check_alive(d.alive, "CommDomain.window");
            return view(d.domain, b, shape, dtype);
          },
          py::arg("buffer"), py::arg("shape"), py::arg("dtype"), "A typed view of buffer with shape.");
}

}  // namespace

void check_alive(const CallAlive& alive, const char* api) {
  if (!alive || !*alive)
    throw UsageError(
        fmt::format("{}: the orchestrator call this handle belongs to has returned; use the Host "
                    "passed to the orchestrator, inside it",
                    api));
}

void bind_host(py::module_& m) {
  bind_domain(m);
  py::class_<PyHost> host(m, "Host", "The orchestrator's handle (pld.run passes it as the first argument).");
  host.def("world",
           [](const PyHost& h) {
             return PyDomain{h.get("Host.world").world(), h.alive};
           })
      .def(
          "alloc_window_buffer",
          [](const PyHost& h, py::handle size, py::handle dtype, const std::string& name) {
            return alloc(h.get("Host.alloc_window_buffer").world(), size, dtype, name);
          },
          py::arg("size"), py::arg("dtype") = py::none(), py::arg("name") = "",
          "alloc_window_buffer(nbytes, name='') or alloc_window_buffer(shape, dtype, name=''): reserves a buffer "
          "at the same offset of every rank's window, zero-filled.")
      .def(
          "window",
          [](const PyHost& h, const WindowBuffer& b, py::handle shape, py::handle dtype) {
            return view(h.get("Host.window").world(), b, shape, dtype);
          },
          py::arg("buffer"), py::arg("shape"), py::arg("dtype"),
          "A typed view (pld.DistributedTensor) of buffer with shape; it must fit the buffer.")
      .def(
          "domain",
          [](const PyHost& h, const std::vector<int>& ranks) {
            return PyDomain{h.get("Host.domain").domain(ranks), h.alive};
          },
          py::arg("ranks"), "A comm domain over the given world ranks (domain-local rank i is the i-th smallest).")
      .def(
          "callback",
          [](const PyHost& h, py::object fn, const py::args& args) {
            Host& host = h.get("Host.callback");
            if (!PyCallable_Check(fn.ptr()))
              throw UsageError(fmt::format("Host.callback: fn {} is not callable; pass a function",
                                           py::repr(fn).cast<std::string>()));
            auto held = gil_shared(py::tuple(args));
            host.callback(PyCallback{gil_shared(std::move(fn)),
                                     std::shared_ptr<py::tuple>(held, reinterpret_cast<py::tuple*>(held.get()))});
          },
          py::arg("fn"),
          "callback(fn, *args): runs fn(*args) on the host after every dispatch recorded before it has finished.");
  bind_host_collectives(host);
  add_fast_methods(host);
}

}  // namespace pld::python
