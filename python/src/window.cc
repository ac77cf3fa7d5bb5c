// pld.DistributedTensor (a window view) and pld.WindowBuffer, and the operand conversions every
// kernel-side binding uses: numpy arrays, host tensors and window views to the runtime's
// type-erased descriptors.
#include "bindings.h"

#include <pld/comm_domain.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::python {

std::string type_name(py::handle value) {
  return py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>();
}

namespace {

py::array window_numpy(py::handle self) {
  const Window& w = self.cast<const Window&>();
  if (!w.state)
    throw UsageError(
        fmt::format("DistributedTensor.numpy: window view {} of shape {} has memory only inside a kernel; read it in a "
                    "kernel dispatched with it (or copy it to a HostTensor there)",
                    w.ref.buffer, w.shape.str()));
  const detail::LocalDesc local = detail::window_local("DistributedTensor.numpy", w.desc());
  return numpy_view(local.data, w.shape, w.dtype, self);
}

}  // namespace

bool is_window(py::handle value) {
  return py::isinstance<Window>(value);
}

const Window& window_of(py::handle value, const char* api, const char* what) {
  if (const Window* w = exact_instance<Window>(value)) return *w;
  if (!is_window(value))
    throw UsageError(
        fmt::format("{}: {} is a {}, not a window view; pass a pld.DistributedTensor made by "
                    "h.window(buffer, shape, dtype)",
                    api, what, type_name(value)));
  return value.cast<const Window&>();
}

detail::LocalDesc local_of(py::handle value, const char* api, const char* what, bool allow_window) {
  if (py::isinstance<py::array>(value)) {  // the common case first: a tile
    auto a = py::reinterpret_borrow<py::array>(value);
    if (!(a.flags() & py::array::c_style))
      throw UsageError(fmt::format("{}: {} is not C-contiguous; pass numpy.ascontiguousarray(...) ", api, what));
    detail::LocalDesc d;
    d.dtype = dtype_of(a.dtype(), api);
    d.data = static_cast<std::byte*>(a.mutable_data());
    for (py::ssize_t i = 0; i < a.ndim(); ++i) d.shape.push_back(a.shape(i));
    d.valid = d.shape;
    return d;
  }
  if (is_window(value)) {
    if (!allow_window)
      throw UsageError(fmt::format("{}: {} is a window view; pass a numpy array (a tile) here", api, what));
    return detail::window_local(api, value.cast<const Window&>().desc());
  }
  if (py::isinstance<HostTensor>(value)) {
    const auto& t = value.cast<const HostTensor&>();
    return {t.data(), t.shape, t.dtype, t.shape};
  }
  throw UsageError(fmt::format("{}: {} is a {}; pass a numpy array, a pld.HostTensor or a window view", api, what,
                               type_name(value)));
}

void bind_window(py::module_& m) {
  py::class_<WindowBuffer>(m, "WindowBuffer", "A window buffer from alloc_window_buffer; h.window() views it.")
      .def_property_readonly("nbytes", &WindowBuffer::bytes)
      .def_readonly("name", &WindowBuffer::name)
      .def("__repr__", [](const WindowBuffer& b) {
        return fmt::format("pld.WindowBuffer(name='{}', nbytes={})", b.name, b.bytes());
      });
  py::class_<Window>(m, "DistributedTensor",
                     "A window view: on the host a handle to pass to dispatch; inside a kernel the rank's own "
                     "copy of the window (numpy through .numpy(), no copy) and peers' copies through "
                     "remote_load / put / get.")
      .def_property_readonly("shape", [](const Window& w) { return to_tuple(w.shape); })
      .def_property_readonly("dtype", [](const Window& w) { return w.dtype; })
      .def_property_readonly("ndim", [](const Window& w) { return w.shape.size(); })
      .def_property_readonly("numel", [](const Window& w) { return w.shape.numel(); })
      .def("numpy", &window_numpy, "This rank's copy of the window as a numpy array (kernels only; no copy).")
      .def(
          "__array__",
          [](py::handle self, py::object dtype) {
            py::array a = window_numpy(self);
            return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
          },
          py::arg("dtype") = py::none())
      .def("__repr__", [](const Window& w) {
        return fmt::format("pld.DistributedTensor(shape={}, dtype={}, domain={}, buffer={})", w.shape.str(),
                           dtype_name(w.dtype), w.ref.domain, w.ref.buffer);
      });
}

}  // namespace pld::python
