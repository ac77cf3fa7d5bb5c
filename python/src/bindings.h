// The pld Python extension (pld._pld): one bind_<concept> per file, called by module.cc, and the
// conversions every file shares (dtypes, shapes, numpy operands, window views, host tensors).
#pragma once

#include <pld/collectives.hpp>
#include <pld/detail/kernel.hpp>
#include <pld/host.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace pld::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_types(py::module_& m);
void bind_host_tensor(py::module_& m);
void bind_window(py::module_& m);
void bind_host(py::module_& m);
void bind_run(py::module_& m);
void bind_kernel(py::module_& m);
void bind_tile(py::module_& m);
void bind_signal(py::module_& m);
void bind_rma(py::module_& m);
void bind_collectives(py::module_& m);
void bind_worker(py::module_& m);
void bind_task(py::module_& m);
void bind_shared_numpy(py::module_& m);

// ----- dtypes and shapes (types.cc) ------------------------------------------------------------

/// The DType of a pld.DType, a numpy dtype, a numpy type (numpy.float32) or a dtype name
/// ("float32", "fp32"). bfloat16 is uint16 storage (pld.bfloat16). Throws UsageError naming `api`.
DType dtype_of(py::handle value, const char* api);
/// The DType of a numpy dtype (its kind and size). Throws UsageError naming `api`.
DType dtype_of(const py::dtype& dt, const char* api);
/// The numpy dtype holding `dtype` (BF16: uint16).
py::dtype numpy_dtype(DType dtype);
/// A shape or offsets from an int, a tuple or a list of ints. Throws UsageError naming `api` and
/// `what` for anything else.
Dims dims_of(py::handle value, const char* api, const char* what);
py::tuple to_tuple(const Dims& dims);
/// Calls `f(T{})` with the C++ element type of `dtype`.
template <class F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::FP32: return f(float{});
    case DType::FP16: return f(fp16{});
    case DType::BF16: return f(bf16{});
    case DType::INT32: return f(std::int32_t{});
    case DType::INT16: return f(std::int16_t{});
    case DType::INT8: return f(std::int8_t{});
    case DType::INT64: return f(std::int64_t{});
    case DType::FP64: return f(double{});
    case DType::UINT8: return f(std::uint8_t{});
    case DType::UINT32: return f(std::uint32_t{});
    case DType::UINT64: return f(std::uint64_t{});
  }
  throw UsageError("pld: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

// ----- operands --------------------------------------------------------------------------------

/// A window view (pld.DistributedTensor): made on the host by Host.window / CommDomain.window;
/// bound to the rank's domain state when a dispatch delivers it to a kernel.
struct Window {
  detail::WindowRef ref{};
  Dims shape;
  DType dtype = DType::FP32;
  const detail::DomainState* state = nullptr;
  detail::WindowDesc desc() const { return {state, ref, shape, dtype}; }
  /// The typed C++ view (host builtins).
  template <class T>
  DistributedTensor<T> typed() const {
    return detail::Access::make<DistributedTensor<T>>(ref, shape, state);
  }
};

/// A host tensor or a view of one (pld.HostTensor): shared memory every rank can see.
struct HostTensor {
  detail::SharedBlock block;  // keeps the memory alive
  std::uint64_t offset = 0;   // bytes from block.base
  Dims shape;
  DType dtype = DType::FP32;
  std::byte* data() const { return block.base + offset; }
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(shape.numel()) * dtype_size(dtype); }
};

/// A HostTensor over the memory of `value` when it is a C-contiguous numpy array of a pld dtype
/// in pld's shared memory (pld.shared_numpy, or a view of a HostTensor); nullopt otherwise.
std::optional<HostTensor> shared_view(py::handle value);

/// A numpy array over `data` with `shape` and `dtype`, keeping `owner` alive (none: the caller
/// guarantees the memory outlives the array).
py::array numpy_view(std::byte* data, const Dims& shape, DType dtype, py::handle owner);

/// The Python type name of `value` ("ndarray", "float"), for error messages.
std::string type_name(py::handle value);

/// The Window held by `value`, or a UsageError naming `api` and `what`.
const Window& window_of(py::handle value, const char* api, const char* what);
/// A rank-local operand: a C-contiguous numpy array of a pld dtype, a HostTensor, or (with
/// `allow_window`) this rank's own copy of a window view. Throws UsageError otherwise.
detail::LocalDesc local_of(py::handle value, const char* api, const char* what, bool allow_window = true);
/// True when `value` is a window view.
bool is_window(py::handle value);

/// The C++ object inside `value` when its Python type is exactly T's bound class, else nullptr: the
/// per-call fast path of the kernel-side bindings (a type compare instead of pybind11's registry
/// lookups in isinstance and cast; a subclass takes the general path).
template <class T>
T* exact_instance(py::handle value) {
  static PyTypeObject* const type = reinterpret_cast<PyTypeObject*>(py::type::of<T>().ptr());
  if (Py_TYPE(value.ptr()) != type) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(value.ptr());
  return static_cast<T*>(inst->get_value_and_holder().value_ptr());
}

[[noreturn]] void throw_not_enum(const char* api, const char* what, py::handle value, py::handle type);
/// The enum value `value` holds (a pld.ReduceOp, pld.WaitCmp, ...), or a UsageError naming `api`,
/// `what`, the value and the enum's members.
template <class E>
E enum_of(py::handle value, const char* api, const char* what) {
  if (const E* e = exact_instance<E>(value)) return *e;
  if (!py::isinstance<E>(value)) throw_not_enum(api, what, value, py::type::of<E>());
  return value.cast<E>();
}

/// Runs `f` with the GIL released (blocking C++ calls: waits, collectives, run).
template <class F>
decltype(auto) without_gil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

/// Whether a signal or atomic call completes at once here, so it may keep the GIL: on the shm
/// backend notify and the atomics never wait; under mpirun they may wait for the network.
inline bool completes_at_once() {
  static const bool shm = launcher_world_size() == 0;
  return shm;
}

/// Runs `f` keeping the GIL where it completes at once (completes_at_once), else without it.
template <class F>
decltype(auto) quick_or_without_gil(F&& f) {
  if (completes_at_once()) return f();
  return without_gil(std::forward<F>(f));
}

}  // namespace pld::python
