// pld.HostTensor: an array in pld's shared memory that every rank sees (zero-copy numpy through
// .numpy(), numpy.asarray or the buffer protocol); t[r] is rank r's slice, t[a:b] a row range. The constructors beyond
// zeros (arange, full, from_numpy, random) are written in Python over these (python/pld/_host.py).
#include "bindings.h"

#include <pld/error.hpp>
#include <pld/tensor.hpp>

#include <fmt/format.h>

namespace pld::python {

namespace {

const char* buffer_format(DType dtype) {
  switch (dtype) {
    case DType::FP32: return "f";
    case DType::FP16: return "e";
    case DType::BF16: return "H";
    case DType::INT32: return "i";
    case DType::INT16: return "h";
    case DType::INT8: return "b";
    case DType::INT64: return "q";
    case DType::FP64: return "d";
    case DType::UINT8: return "B";
    case DType::UINT32: return "I";
    case DType::UINT64: return "Q";
  }
  return "B";
}

HostTensor make_filled(py::handle shape_arg, py::handle dtype_arg, bool zero) {
  HostTensor t;
  t.shape = dims_of(shape_arg, "HostTensor", "shape");
  t.dtype = dtype_of(dtype_arg, "HostTensor");
  detail::check_shape("HostTensor", t.shape, dtype_size(t.dtype));
  const auto bytes = detail::checked_bytes("HostTensor", t.shape, dtype_size(t.dtype));
  t.block = detail::shared_alloc(static_cast<std::size_t>(bytes), zero);
  return t;
}

HostTensor make(py::handle shape_arg, py::handle dtype_arg) {
  return make_filled(shape_arg, dtype_arg, true);
}

HostTensor slice(const HostTensor& t, Index i) {
  const Index rows = t.shape.size() ? t.shape[0] : 0;
  if (t.shape.size() == 0 || i < -rows || i >= rows)
    throw UsageError(
        fmt::format("HostTensor[{}]: index out of range for shape {}; index the leading dimension "
                    "with 0 <= i < {} (or -{} <= i < 0)",
                    i, t.shape.str(), rows, rows));
  if (i < 0) i += rows;
  HostTensor s;
  s.block = t.block;
  s.shape = t.shape.drop_front();
  s.dtype = t.dtype;
  s.offset = t.offset + static_cast<std::uint64_t>(i * s.shape.numel()) * dtype_size(t.dtype);
  return s;
}

// t[a:b]: rows [a, b) of the leading dimension as a view (numpy's clamping of the bounds; only
// step 1, which keeps the view contiguous).
HostTensor row_range(const HostTensor& t, const py::slice& range) {
  const Index rows = t.shape.size() ? t.shape[0] : 0;
  py::ssize_t start = 0, stop = 0, step = 0, length = 0;
  if (t.shape.size() == 0 || !range.compute(static_cast<py::ssize_t>(rows), &start, &stop, &step, &length))
    throw UsageError(fmt::format("HostTensor[a:b]: a tensor of shape {} has no rows to slice", t.shape.str()));
  if (step != 1)
    throw UsageError(
        fmt::format("HostTensor[a:b:{}]: only contiguous row ranges (step 1) are views of shared "
                    "memory; copy with numpy (t.numpy()[a:b:step]) for a strided selection",
                    step));
  HostTensor s;
  s.block = t.block;
  s.shape = t.shape;
  s.shape[0] = static_cast<Index>(length);
  s.dtype = t.dtype;
  s.offset = t.offset + static_cast<std::uint64_t>(start * t.shape.drop_front().numel()) * dtype_size(t.dtype);
  return s;
}

}  // namespace

void bind_host_tensor(py::module_& m) {
  py::class_<HostTensor>(m, "HostTensor", py::buffer_protocol(),
                         "An array in pld's shared memory, seen by every rank (zero-copy numpy via .numpy()). "
                         "t[r] is rank r's slice, the argument a dispatch usually takes.")
      .def(py::init(&make), py::arg("shape"), py::arg("dtype") = DType::FP32,
           "A zero-filled tensor of `shape` (tuple of ints) and `dtype` (pld.DType or numpy dtype).")
      .def_static("zeros", &make, py::arg("shape"), py::arg("dtype") = DType::FP32, "A zero-filled tensor.")
      .def_static(
          "_uninitialized", [](py::handle shape, py::handle dtype) { return make_filled(shape, dtype, false); },
          py::arg("shape"), py::arg("dtype") = DType::FP32,
          "A tensor whose contents are undefined (the caller writes every element; from_numpy).")
      .def_property_readonly("shape", [](const HostTensor& t) { return to_tuple(t.shape); })
      .def_property_readonly("dtype", [](const HostTensor& t) { return t.dtype; })
      .def_property_readonly("ndim", [](const HostTensor& t) { return t.shape.size(); })
      .def_property_readonly("numel", [](const HostTensor& t) { return t.shape.numel(); })
      .def_property_readonly("nbytes", [](const HostTensor& t) { return t.bytes(); })
      .def("__len__", [](const HostTensor& t) { return t.shape.size() ? t.shape[0] : 0; })
      .def("__getitem__", &slice, py::arg("i"), "Rank i's slice: the tensor without its leading dimension.")
      .def("__getitem__", &row_range, py::arg("rows"),
           "Rows [a, b) of the leading dimension (t[a:b]): a view of the same shared memory.")
      .def(
          "numpy",
          [](py::handle self) {
            const auto& t = self.cast<const HostTensor&>();
            return numpy_view(t.data(), t.shape, t.dtype, self);
          },
          "A numpy array over the same shared memory (no copy); BF16 shows as uint16.")
      .def(
          "__array__",
          [](py::handle self, py::object dtype) {
            const auto& t = self.cast<const HostTensor&>();
            py::array a = numpy_view(t.data(), t.shape, t.dtype, self);
            return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
          },
          py::arg("dtype") = py::none())
      .def_buffer([](const HostTensor& t) {
        std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
        std::vector<py::ssize_t> strides(shape.size());
        py::ssize_t stride = static_cast<py::ssize_t>(dtype_size(t.dtype));
        for (std::size_t d = shape.size(); d-- > 0;) {
          strides[d] = stride;
          stride *= shape[d];
        }
        return py::buffer_info(t.data(), static_cast<py::ssize_t>(dtype_size(t.dtype)), buffer_format(t.dtype),
                               static_cast<py::ssize_t>(shape.size()), shape, strides);
      })
      .def("__repr__", [](const HostTensor& t) {
        return fmt::format("pld.HostTensor(shape={}, dtype={})", t.shape.str(), dtype_name(t.dtype));
      });
}

}  // namespace pld::python
