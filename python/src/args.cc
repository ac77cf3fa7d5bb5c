// The encoding of a Python dispatch's arguments: a tag byte per value, then its payload. Window
// views and host tensors travel address-free as the C++ codecs send them; numbers, strings, enums
// and tuples/lists of them as values; anything else picklable as a pickle.
#include "kernel.h"
#include "worker.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <array>

namespace pld::python {

namespace {

enum class Tag : std::uint8_t { None, Bool, Int, Float, Str, Window, Tensor, Tuple, List, Enum, Pickle };
enum class EnumKind : std::uint8_t { DType, NotifyOp, WaitCmp, AtomicType, ReduceOp, AllreduceMode, BackendKind };

template <class E>
bool try_enum(detail::ArgWriter& w, py::handle v, EnumKind kind) {
  if (!py::isinstance<E>(v)) return false;
  w.value(Tag::Enum);
  w.value(kind);
  w.value(static_cast<std::int32_t>(v.cast<E>()));
  return true;
}

bool encode_enum(detail::ArgWriter& w, py::handle v) {
  return try_enum<DType>(w, v, EnumKind::DType) || try_enum<NotifyOp>(w, v, EnumKind::NotifyOp) ||
         try_enum<WaitCmp>(w, v, EnumKind::WaitCmp) || try_enum<AtomicType>(w, v, EnumKind::AtomicType) ||
         try_enum<ReduceOp>(w, v, EnumKind::ReduceOp) || try_enum<AllreduceMode>(w, v, EnumKind::AllreduceMode) ||
         try_enum<BackendKind>(w, v, EnumKind::BackendKind);
}

py::object decode_enum(detail::ArgReader& r) {
  const auto kind = r.value<EnumKind>();
  const auto v = r.value<std::int32_t>();
  switch (kind) {
    case EnumKind::DType: return py::cast(static_cast<DType>(v));
    case EnumKind::NotifyOp: return py::cast(static_cast<NotifyOp>(v));
    case EnumKind::WaitCmp: return py::cast(static_cast<WaitCmp>(v));
    case EnumKind::AtomicType: return py::cast(static_cast<AtomicType>(v));
    case EnumKind::ReduceOp: return py::cast(static_cast<ReduceOp>(v));
    case EnumKind::AllreduceMode: return py::cast(static_cast<AllreduceMode>(v));
    case EnumKind::BackendKind: return py::cast(static_cast<BackendKind>(v));
  }
  throw UsageError("dispatch: corrupt enum argument (internal)");
}

void write_string(detail::ArgWriter& w, const std::string& s) {
  w.value(static_cast<std::uint32_t>(s.size()));
  write_bytes(w, s.data(), s.size());
}

void encode_one(detail::ArgWriter& w, py::handle v, std::size_t index);

void encode_tensor(detail::ArgWriter& w, const HostTensor& t) {
  w.note_block(t.block.id, t.offset, t.bytes());
  w.value(Tag::Tensor);
  w.value(t.block.id);
  w.value(t.offset);
  w.value(t.shape);
  w.value(t.dtype);
}

void encode_sequence(detail::ArgWriter& w, py::handle v, Tag tag, std::size_t index) {
  w.value(tag);
  w.value(static_cast<std::uint32_t>(py::len(v)));
  for (py::handle item : v) encode_one(w, item, index);
}

void encode_pickle(detail::ArgWriter& w, py::handle v, std::size_t index) {
  py::bytes blob;
  try {
    blob = py::module_::import("pickle").attr("dumps")(v);
  } catch (py::error_already_set& e) {
    throw UsageError(
        fmt::format("Host.dispatch: argument {} ({}) cannot be sent to a rank ({}); pass window views, "
                    "HostTensor slices, numbers, strings, enums or picklable values",
                    index, py::repr(v).cast<std::string>(), e.what()));
  }
  w.value(Tag::Pickle);
  write_string(w, blob.cast<std::string>());
}

void encode_one(detail::ArgWriter& w, py::handle v, std::size_t index) {
  if (v.is_none()) {
    w.value(Tag::None);
  } else if (py::isinstance<py::bool_>(v)) {
    w.value(Tag::Bool);
    w.value(static_cast<std::uint8_t>(v.cast<bool>()));
  } else if (PyLong_CheckExact(v.ptr()) && _PyLong_NumBits(v.ptr()) < 64) {
    w.value(Tag::Int);
    w.value(v.cast<std::int64_t>());
  } else if (PyFloat_CheckExact(v.ptr())) {
    w.value(Tag::Float);
    w.value(v.cast<double>());
  } else if (PyUnicode_CheckExact(v.ptr())) {
    w.value(Tag::Str);
    write_string(w, v.cast<std::string>());
  } else if (is_window(v)) {
    const Window& win = v.cast<const Window&>();
    w.note_window(win.ref, win.shape, win.dtype);
    w.value(Tag::Window);
    w.value(win.ref);
    w.value(win.shape);
    w.value(win.dtype);
  } else if (py::isinstance<HostTensor>(v)) {
    encode_tensor(w, v.cast<const HostTensor&>());
  } else if (py::isinstance<DeviceTensor>(v)) {  // resident: the rank reads its own memory
    const auto& t = v.cast<const DeviceTensor&>();
    detail::check_device_live("Host.dispatch", *t.alloc);
    w.note_device(t.alloc);
    w.value(Tag::Tensor);
    w.value(t.alloc->id | detail::kDeviceBlockBit);
    w.value(std::uint64_t{0});
    w.value(t.shape);
    w.value(t.dtype);
  } else if (PyTuple_CheckExact(v.ptr())) {
    encode_sequence(w, v, Tag::Tuple, index);
  } else if (PyList_CheckExact(v.ptr())) {
    encode_sequence(w, v, Tag::List, index);
  } else if (!encode_enum(w, v)) {
    if (py::isinstance<py::array>(v)) {
      if (auto t = shared_view(v)) return encode_tensor(w, *t);
      throw UsageError(
          fmt::format("Host.dispatch: argument {} is a numpy array in ordinary memory, which the ranks "
                      "cannot see; create it as a pld.HostTensor (or under pld.shared_numpy()), or pass it "
                      "to pld.run, and dispatch its slice t[r]",
                      index));
    }
    encode_pickle(w, v, index);
  }
}

py::object decode_one(detail::ArgReader& r);

py::object decode_tensor(detail::ArgReader& r) {
  const auto block = r.value<std::uint32_t>();
  const auto offset = r.value<std::uint64_t>();
  const auto shape = r.value<Dims>();
  const auto dtype = r.value<DType>();
  std::byte* base = (block & detail::kDeviceBlockBit) ? detail::rank_device_base(block & ~detail::kDeviceBlockBit)
                    : block                           ? detail::rank_block_base(block)
                                                      : nullptr;
  return numpy_view(base ? base + offset : nullptr, shape, dtype, py::handle());
}

py::list decode_list(detail::ArgReader& r) {
  const auto n = r.value<std::uint32_t>();
  py::list items;
  for (std::uint32_t i = 0; i < n; ++i) items.append(decode_one(r));
  return items;
}

py::object decode_one(detail::ArgReader& r) {
  switch (r.value<Tag>()) {
    case Tag::None: return py::none();
    case Tag::Bool: return py::bool_(r.value<std::uint8_t>() != 0);
    case Tag::Int: return py::int_(r.value<std::int64_t>());
    case Tag::Float: return py::float_(r.value<double>());
    case Tag::Str: return py::str(read_string(r));
    case Tag::Window: {
      Window w;
      w.ref = r.value<detail::WindowRef>();
      w.shape = r.value<Dims>();
      w.dtype = r.value<DType>();
      w.state = detail::rank_domain(w.ref.domain);
      return py::cast(w);
    }
    case Tag::Tensor: return decode_tensor(r);
    case Tag::Tuple: return py::tuple(decode_list(r));
    case Tag::List: return decode_list(r);
    case Tag::Enum: return decode_enum(r);
    case Tag::Pickle: return py::module_::import("pickle").attr("loads")(py::bytes(read_string(r)));
  }
  throw UsageError("dispatch: corrupt argument frame (internal)");
}

}  // namespace

void write_bytes(detail::ArgWriter& w, const void* data, std::size_t size) {
  auto& bytes = w.bytes();
  const auto* p = static_cast<const std::byte*>(data);
  bytes.insert(bytes.end(), p, p + size);
}

std::string read_string(detail::ArgReader& r) {
  const auto n = r.value<std::uint32_t>();
  std::string s(n, '\0');
  r.bytes(s.data(), n);
  return s;
}

void encode_args(detail::ArgWriter& w, PyObject* const* args, std::size_t n) {
  w.value(static_cast<std::uint32_t>(n));
  for (std::size_t i = 0; i < n; ++i) encode_one(w, args[i], i);
}

py::tuple decode_args(detail::ArgReader& r) {
  const auto n = r.value<std::uint32_t>();
  py::tuple out(n);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = decode_one(r);
  return out;
}

}  // namespace pld::python
