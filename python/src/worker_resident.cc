// pld.DistributedWorker's resident tensors: pld.DeviceTensor lives in one rank process's memory
// across calls; the host reaches it only through the worker (copy_to / copy_from). The stacked
// form (pld.StackedDeviceTensor) is assembled from these in python/pld/worker.py.
#include "worker.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <string>

namespace pld::python {

namespace {

/// A C-contiguous array of `dtype` holding `value` (converted like numpy.asarray(value, dtype)).
py::array contiguous(const py::handle& value, DType dtype) {
  return py::module_::import("numpy").attr("ascontiguousarray")(value, numpy_dtype(dtype)).cast<py::array>();
}

void check_elements(const char* api, const DeviceTensor& t, std::uint64_t have_bytes) {
  if (have_bytes != t.bytes()) detail::WorkerCore::size_mismatch(api, have_bytes, t.bytes());
}

DeviceTensor alloc_tensor(Worker& w, const py::object& shape, const py::object& dtype, int worker_id,
                          const py::object& init) {
  const char* api = "DistributedWorker.alloc_tensor";
  DeviceTensor t;
  t.shape = dims_of(shape, api, "shape");
  t.dtype = dtype.is_none() ? DType::FP32 : dtype_of(dtype, api);
  detail::check_shape(api, t.shape, dtype_size(t.dtype));
  py::array data;
  if (!init.is_none()) {
    data = contiguous(init, t.dtype);
    check_elements(api, t, static_cast<std::uint64_t>(data.nbytes()));
  }
  const void* src = init.is_none() ? nullptr : data.data();
  detail::WorkerCore& core = w.core();
  py::gil_scoped_release release;
  t.alloc = core.device_alloc(api, worker_id, t.bytes(), src);
  return t;
}

void copy_to(Worker& w, const DeviceTensor& dst, const py::object& src) {
  const char* api = "DistributedWorker.copy_to";
  detail::WorkerCore& core = w.core();
  core.check_owned(api, dst.alloc);
  const py::array data = contiguous(src, dst.dtype);
  check_elements(api, dst, static_cast<std::uint64_t>(data.nbytes()));
  py::gil_scoped_release release;
  core.device_write(api, dst.alloc, 0, data.data(), dst.bytes());
}

py::array copy_from(Worker& w, const DeviceTensor& src, const py::object& out) {
  const char* api = "DistributedWorker.copy_from";
  detail::WorkerCore& core = w.core();
  core.check_owned(api, src.alloc);
  py::array dst;
  if (out.is_none()) {
    dst = py::array(numpy_dtype(src.dtype), std::vector<py::ssize_t>(src.shape.begin(), src.shape.end()));
  } else {
    if (!py::isinstance<py::array>(out) || !(out.cast<py::array>().flags() & py::array::c_style) ||
        !out.cast<py::array>().writeable() || !out.cast<py::array>().dtype().is(numpy_dtype(src.dtype)))
      throw UsageError(
          fmt::format("{}: out {} is not a writable C-contiguous numpy array of {}; pass "
                      "numpy.empty({}, {}) or out=None",
                      api, py::repr(out).cast<std::string>(), dtype_name(src.dtype),
                      py::repr(to_tuple(src.shape)).cast<std::string>(), dtype_name(src.dtype)));
    dst = out.cast<py::array>();
    check_elements(api, src, static_cast<std::uint64_t>(dst.nbytes()));
  }
  void* target = dst.mutable_data();
  {
    py::gil_scoped_release release;
    core.device_read(api, src.alloc, 0, target, src.bytes());
  }
  return dst;
}

void free_tensor(Worker& w, const DeviceTensor& t) {
  detail::WorkerCore& core = w.core();
  py::gil_scoped_release release;
  core.device_free("DistributedWorker.free_tensor", t.alloc);
}

std::string device_repr(const DeviceTensor& t) {
  const char* state = !t.alloc                                                   ? "empty"
                      : t.alloc->state.load() == detail::DeviceAllocation::Live  ? "live"
                      : t.alloc->state.load() == detail::DeviceAllocation::Freed ? "freed"
                      : t.alloc->state.load() == detail::DeviceAllocation::Lost  ? "lost"
                                                                                 : "closed";
  return fmt::format("DeviceTensor(shape={}, dtype={}, worker_id={}, {})",
                     py::repr(to_tuple(t.shape)).cast<std::string>(), dtype_name(t.dtype), t.alloc ? t.alloc->rank : -1,
                     state);
}

}  // namespace

void bind_worker_resident(py::module_& m, py::class_<Worker>& worker) {
  py::class_<DeviceTensor>(m, "DeviceTensor", R"doc(
A tensor resident in one rank process of a DistributedWorker (the model's device memory of rank
``worker_id``), kept across calls. Pass it to ``h.dispatch(worker_id, kernel, t)``: the kernel
receives a numpy array over that memory (no copy). The host reads and writes it only through the
worker (copy_to / copy_from). Valid until freed, until the worker closes, or until its rank process
is lost; using it after that raises pld.UsageError.
)doc")
      .def_property_readonly("shape", [](const DeviceTensor& t) { return to_tuple(t.shape); })
      .def_property_readonly("dtype", [](const DeviceTensor& t) { return t.dtype; })
      .def_property_readonly(
          "worker_id", [](const DeviceTensor& t) { return t.alloc ? t.alloc->rank : -1; },
          "The world rank whose process holds the memory.")
      .def_property_readonly("numel", [](const DeviceTensor& t) { return t.shape.numel(); })
      .def_property_readonly("nbytes", &DeviceTensor::bytes)
      .def_property_readonly(
          "live",
          [](const DeviceTensor& t) { return t.alloc && t.alloc->state.load() == detail::DeviceAllocation::Live; },
          "False once freed, lost with its rank, or closed with its worker.")
      .def("__repr__", &device_repr);
  worker.def("alloc_tensor", &alloc_tensor, py::arg("shape"), py::arg("dtype"), py::arg("worker_id"), py::arg("init"))
      .def("copy_to", &copy_to, py::arg("dst"), py::arg("src"))
      .def("copy_from", &copy_from, py::arg("src"), py::arg("out"))
      .def("free_tensor", &free_tensor, py::arg("tensor"))
      .def(
          "stacked_ids",
          [](Worker& w, Index batch, std::vector<int> ids) {
            return w.core().stacked_ids("DistributedWorker.alloc_stacked_tensor", batch, std::move(ids));
          },
          py::arg("batch"), py::arg("ids"));
}

}  // namespace pld::python
