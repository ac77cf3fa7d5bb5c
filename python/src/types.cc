// Enums and value types: pld.DType (and the numpy dtypes it maps to), NotifyOp, WaitCmp,
// AtomicType, ReduceOp, AllreduceMode, BackendKind, RaceCheck; shape and dtype conversions shared by every
// binding file.
#include "bindings.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <cstring>
#include <iterator>

namespace pld::python {

namespace {

constexpr DType kAllDTypes[] = {DType::FP32,  DType::FP16, DType::BF16,  DType::INT32,  DType::INT16, DType::INT8,
                                DType::INT64, DType::FP64, DType::UINT8, DType::UINT32, DType::UINT64};

/// numpy kind + itemsize of each DType ("f4", "u2" for bf16's storage, ...).
const char* numpy_code(DType dtype) {
  switch (dtype) {
    case DType::FP32: return "f4";
    case DType::FP16: return "f2";
    case DType::BF16: return "u2";
    case DType::INT32: return "i4";
    case DType::INT16: return "i2";
    case DType::INT8: return "i1";
    case DType::INT64: return "i8";
    case DType::FP64: return "f8";
    case DType::UINT8: return "u1";
    case DType::UINT32: return "u4";
    case DType::UINT64: return "u8";
  }
  return "?";
}

[[noreturn]] void bad_dtype(py::handle value, const char* api) {
  throw UsageError(
      fmt::format("{}: dtype {} is not a pld element type; pass a pld.DType or one of numpy's float32, float16, "
                  "pld.bfloat16 (uint16 storage), int32, int16, int8, int64, float64, uint8, uint32, uint64",
                  api, py::repr(value).cast<std::string>()));
}

}  // namespace

void throw_not_enum(const char* api, const char* what, py::handle value, py::handle type) {
  const std::string name = py::str(type.attr("__name__")).cast<std::string>();
  std::string members;
  for (auto item : py::reinterpret_borrow<py::dict>(type.attr("__members__")))
    fmt::format_to(std::back_inserter(members), "{}pld.{}.{}", members.empty() ? "" : ", ", name,
                   py::str(item.first).cast<std::string>());
  throw UsageError(fmt::format("{}: {} {} is not a pld.{}; pass one of {}", api, what,
                               py::repr(value).cast<std::string>(), name, members));
}

DType dtype_of(const py::dtype& dt, const char* api) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  for (DType d : kAllDTypes)
    if (numpy_code(d)[0] == kind && static_cast<py::ssize_t>(numpy_code(d)[1] - '0') == size) return d;
  bad_dtype(dt, api);
}

DType dtype_of(py::handle value, const char* api) {
  if (const DType* d = exact_instance<DType>(value)) return *d;
  if (py::isinstance<py::dtype>(value)) return dtype_of(py::reinterpret_borrow<py::dtype>(value), api);
  if (py::isinstance<DType>(value)) return value.cast<DType>();
  if (py::isinstance<py::str>(value)) {
    const auto name = value.cast<std::string>();
    for (DType d : kAllDTypes)
      if (name == dtype_name(d)) return d;
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(value));
  } catch (const py::error_already_set&) {
    bad_dtype(value, api);
  }
  const std::string code = std::string(1, dt.kind()) + std::to_string(dt.itemsize());
  for (DType d : kAllDTypes)
    if (code == numpy_code(d)) return d;
  bad_dtype(value, api);
}

py::dtype numpy_dtype(DType dtype) {
  return py::dtype(numpy_code(dtype));
}

Dims dims_of(py::handle value, const char* api, const char* what) {
  auto bad = [&]() -> Dims {
    throw UsageError(fmt::format("{}: {} {} is not a tuple of ints; pass e.g. (1, 256)", api, what,
                                 py::repr(value).cast<std::string>()));
  };
  auto as_index = [&](py::handle v) -> Index {
    if (py::isinstance<py::bool_>(v) || !PyIndex_Check(v.ptr())) bad();
    return py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr())).cast<Index>();
  };
  if (PyTuple_CheckExact(value.ptr()) && PyTuple_GET_SIZE(value.ptr()) <= kMaxDims) {  // the common case
    Dims dims;
    bool exact = true;
    for (Py_ssize_t i = 0; exact && i < PyTuple_GET_SIZE(value.ptr()); ++i) {
      PyObject* v = PyTuple_GET_ITEM(value.ptr(), i);
      exact = PyLong_CheckExact(v);
      if (exact) dims.push_back(PyLong_AsLongLong(v));
    }
    if (exact && !PyErr_Occurred()) return dims;
    PyErr_Clear();
  }
  if (PyIndex_Check(value.ptr()) && !py::isinstance<py::bool_>(value)) return Dims{as_index(value)};
  if (!py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value)) return bad();
  Dims dims;
  for (py::handle v : value) {
    if (dims.size() == kMaxDims)
      throw UsageError(fmt::format("{}: {} {} has more than {} dimensions; pld tensors have at most {}", api, what,
                                   py::repr(value).cast<std::string>(), kMaxDims, kMaxDims));
    dims.push_back(as_index(v));
  }
  return dims;
}

py::tuple to_tuple(const Dims& dims) {
  py::tuple t(dims.size());
  for (int i = 0; i < dims.size(); ++i) t[static_cast<std::size_t>(i)] = py::int_(dims[i]);
  return t;
}

py::array numpy_view(std::byte* data, const Dims& shape, DType dtype, py::handle owner) {
  std::vector<py::ssize_t> extents(shape.begin(), shape.end());
  py::object base = owner ? py::reinterpret_borrow<py::object>(owner) : py::object(py::capsule(data, [](void*) {}));
  return py::array(numpy_dtype(dtype), extents, {}, data, base);
}

void bind_types(py::module_& m) {
  py::enum_<DType> dtype(m, "DType", "Element types of tensors and windows (numpy: DType.numpy).");
  for (DType d : kAllDTypes) {
    std::string upper = dtype_name(d);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    dtype.value(upper.c_str(), d);
  }
  dtype
      .def_property_readonly(
          "numpy", [](DType d) { return numpy_dtype(d); }, "The numpy dtype (BF16: uint16).")
      .def_property_readonly(
          "itemsize", [](DType d) { return dtype_size(d); }, "Bytes per element.")
      .def_property_readonly(
          "short_name", [](DType d) { return dtype_name(d); }, "\"fp32\", \"bf16\", ...");
  m.def(
      "dtype", [](py::handle v) { return dtype_of(v, "pld.dtype"); }, py::arg("value"),
      "The pld.DType of a numpy dtype, numpy type, name or pld.DType.");
  py::enum_<NotifyOp>(m, "NotifyOp", "notify: what happens to the peer's signal cell.")
      .value("AtomicAdd", NotifyOp::AtomicAdd)
      .value("Set", NotifyOp::Set);
  py::enum_<WaitCmp>(m, "WaitCmp", "wait: how the local cell compares with the expected value (signed int32).")
      .value("Eq", WaitCmp::Eq)
      .value("Ge", WaitCmp::Ge)
      .value("Ne", WaitCmp::Ne)
      .value("Gt", WaitCmp::Gt)
      .value("Lt", WaitCmp::Lt)
      .value("Le", WaitCmp::Le);
  py::enum_<AtomicType>(m, "AtomicType",
                        "put / remote_store: plain store (NONE; also reachable as getattr(AtomicType, 'None')) "
                        "or element-wise atomic Add.")
      .value("NONE", AtomicType::None)
      .value("None", AtomicType::None)
      .value("Add", AtomicType::Add);
  py::enum_<ReduceOp>(m, "ReduceOp", "Reduction operator of the collectives.")
      .value("Sum", ReduceOp::Sum)
      .value("Max", ReduceOp::Max)
      .value("Min", ReduceOp::Min)
      .value("Prod", ReduceOp::Prod);
  py::enum_<AllreduceMode>(m, "AllreduceMode", "Schedule of an allreduce.")
      .value("Auto", AllreduceMode::Auto)
      .value("Mesh", AllreduceMode::Mesh)
      .value("Ring", AllreduceMode::Ring)
      .value("TwoShot", AllreduceMode::TwoShot);
  py::enum_<BackendKind>(m, "BackendKind", "Which machinery carries windows and signals.")
      .value("Auto", BackendKind::Auto)
      .value("Shm", BackendKind::Shm)
      .value("Mpi", BackendKind::Mpi);
  py::enum_<RaceCheck>(m, "RaceCheck", "The race detector: Setting (PLD_DEBUG decides), Off, Fail or Warn.")
      .value("Setting", RaceCheck::Setting)
      .value("Off", RaceCheck::Off)
      .value("Fail", RaceCheck::Fail)
      .value("Warn", RaceCheck::Warn);
  m.attr("MAX_DIMS") = kMaxDims;
  m.attr("MAX_RANKS") = kMaxRanks;
  m.attr("MAX_CORE_NUM") = kMaxCoreNum;
}

}  // namespace pld::python
