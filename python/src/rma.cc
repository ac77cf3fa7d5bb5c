// pld.tensor's data movement: put / get (full-slice and region forms), remote_store, put_signal and
// the non-blocking put_nbi / get_nbi / put_signal_nbi. Options are keyword-only arguments (atomic,
// chunk_rows, chunk_cols, pipeline); the region form takes dst_offsets, src_offsets and shape,
// positionally as in C++ or by keyword. Transfers release the GIL.
#include "bindings.h"
#include "fast_call.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>
#include <pld/nbi.hpp>

#include <fmt/format.h>

#include <array>
#include <optional>

namespace pld::python {

namespace {

/// The region of a put or get: none, or all three of dst_offsets, src_offsets and shape.
struct Region {
  std::optional<Dims> dst, src, shape;
  const Dims* dst_ptr() const { return dst ? &*dst : nullptr; }
  const Dims* src_ptr() const { return src ? &*src : nullptr; }
  const Dims* shape_ptr() const { return shape ? &*shape : nullptr; }
};

bool present(py::handle value) {
  return value && !value.is_none();
}

/// The region from three arguments that are each absent (a null handle), None or given.
Region region_of(const char* api, py::handle dst, py::handle src, py::handle shape) {
  const int given = present(dst) + present(src) + present(shape);
  if (given == 0) return {};
  if (given != 3)
    throw UsageError(
        fmt::format("{}: the region form needs dst_offsets, src_offsets and shape together (got {} of "
                    "3); give all three or none",
                    api, given));
  return {dims_of(dst, api, "dst_offsets"), dims_of(src, api, "src_offsets"), dims_of(shape, api, "shape")};
}

// ----- put / get / put_signal and their _nbi forms: fast entry points (fast_call.h) -------------
// The region form's three arguments follow src positionally (as in C++) or come by keyword.

constexpr std::size_t kRegion = 3;  // dst_offsets, src_offsets, shape: arguments 3, 4, 5

PutOptions put_options(const CallArgs& a, std::size_t first) {
  return {a.enum_or(first, AtomicType::None), a.int_or(first + 1, 0), a.int_or(first + 2, 0),
          a.bool_or(first + 3, false)};
}

template <bool Nbi>
py::object put(const CallArgs& a) {
  const char* api = Nbi ? "tensor::put_nbi" : "tensor::put";
  const detail::WindowDesc d = window_of(a[0], api, "dst").desc();
  const detail::LocalDesc s = local_of(a[2], api, "src");
  const Region r = region_of(api, a[kRegion], a[kRegion + 1], a[kRegion + 2]);
  const PutOptions o = put_options(a, 6);
  const int peer = a.integer(1);
  without_gil([&] {
    if (Nbi)
      detail::put_nbi(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
    else
      detail::put(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
  });
  return py::none();
}

template <bool Nbi>
py::object get(const CallArgs& a) {
  const char* api = Nbi ? "tensor::get_nbi" : "tensor::get";
  const detail::LocalDesc d = local_of(a[0], api, "dst");
  const detail::WindowDesc s = window_of(a[2], api, "src").desc();
  const Region r = region_of(api, a[kRegion], a[kRegion + 1], a[kRegion + 2]);
  const GetOptions o{a.int_or(6, 0), a.int_or(7, 0), a.bool_or(8, false)};
  const int peer = a.integer(1);
  without_gil([&] {
    if (Nbi)
      detail::get_nbi(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
    else
      detail::get(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
  });
  return py::none();
}

template <bool Nbi>
py::object put_signal(const CallArgs& a) {
  const char* api = Nbi ? "tensor::put_signal_nbi" : "tensor::put_signal";
  for (std::size_t i = 6; i < 10; ++i) a.require(i);
  const detail::WindowDesc d = window_of(a[0], api, "dst").desc();
  const detail::LocalDesc s = local_of(a[2], api, "src");
  const Region r = region_of(api, a[kRegion], a[kRegion + 1], a[kRegion + 2]);
  const detail::WindowDesc sig = window_of(a[6], api, "signal").desc();
  const Dims sig_off = dims_of(a[7], api, "signal_offsets");
  const int value = a.integer(8), peer = a.integer(1);
  const NotifyOp op = a.enum_or(9, NotifyOp::Set);
  const PutOptions o = put_options(a, 10);
  without_gil([&] {
    detail::put_signal(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), detail::SignalArg{sig, sig_off, value, op},
                       o, Nbi);
  });
  return py::none();
}

constexpr FastSignature kPut{
    "tensor::put",
    {"dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "atomic", "chunk_rows", "chunk_cols", "pipeline"},
    10,
    6,
    3};
constexpr FastSignature kPutNbi{
    "tensor::put_nbi",
    {"dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "atomic", "chunk_rows", "chunk_cols", "pipeline"},
    10,
    6,
    3};
constexpr FastSignature kGet{
    "tensor::get",
    {"dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "chunk_rows", "chunk_cols", "pipeline"},
    9,
    6,
    3};
constexpr FastSignature kGetNbi{
    "tensor::get_nbi",
    {"dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "chunk_rows", "chunk_cols", "pipeline"},
    9,
    6,
    3};
// put_signal's positional forms are (dst, peer, src, signal, signal_offsets, value, op) and
// (dst, peer, src, dst_offsets, src_offsets, shape, signal, signal_offsets, value, op): its entry
// moves the first form's last four to their places in the second before binding.
constexpr FastSignature kPutSignal{"tensor::put_signal",
                                   {"dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "signal",
                                    "signal_offsets", "value", "op", "atomic", "chunk_rows", "chunk_cols", "pipeline"},
                                   14,
                                   10,
                                   3};
constexpr FastSignature kPutSignalNbi{
    "tensor::put_signal_nbi",
    {"dst", "peer", "src", "dst_offsets", "src_offsets", "shape", "signal", "signal_offsets", "value", "op", "atomic",
     "chunk_rows", "chunk_cols", "pipeline"},
    14,
    10,
    3};

template <const FastSignature& Sig, bool Nbi>
PyObject* put_signal_entry(PyObject* /*module*/, PyObject* const* argv, Py_ssize_t nargsf, PyObject* kwnames) {
  try {
    const Py_ssize_t given = PyVectorcall_NARGS(nargsf);
    if (given != 7) return fast_entry<Sig, put_signal<Nbi>>(nullptr, argv, nargsf, kwnames);
    const auto keywords = static_cast<std::size_t>(kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (keywords > kMaxFastParams)
      throw py::type_error(fmt::format("{}() got {} keyword arguments; it takes at most {}", python_name(Sig.api),
                                       keywords, Sig.count - Sig.required));
    std::array<PyObject*, 10 + kMaxFastParams> moved{};
    for (std::size_t i = 0; i < 3; ++i) moved[i] = argv[i];
    for (std::size_t i = 3; i < 7; ++i) moved[i + 3] = argv[i];
    for (std::size_t k = 0; k < keywords; ++k) moved[10 + k] = argv[7 + k];
    return put_signal<Nbi>(CallArgs(Sig, moved.data(), 10, kwnames)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyMethodDef g_rma_calls[] = {
    fast_method<kPut, put<false>>(
        "put(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, *, atomic=pld.AtomicType.NONE, "
        "chunk_rows=0, chunk_cols=0, pipeline=False)\n\nCopies src (a rank-local array or this rank's window copy) "
        "into rank peer's copy of dst; with dst_offsets, src_offsets and shape, that region. Synchronous for the "
        "sender; pair it with notify / wait."),
    fast_method<kPutNbi, put<true>>("put_nbi(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, *, "
                                    "atomic=..., chunk_rows=0, chunk_cols=0, pipeline=False)\n\nNon-blocking put: "
                                    "complete at pld.system.quiet(); src is read until then."),
    fast_method<kGet, get<false>>(
        "get(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, *, chunk_rows=0, chunk_cols=0, "
        "pipeline=False)\n--\n\nCopies rank peer's copy of src (or its region) into dst (a rank-local array or "
        "this rank's window copy)."),
    fast_method<kGetNbi, get<true>>(
        "get_nbi(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, *, chunk_rows=0, chunk_cols=0, "
        "pipeline=False)\n--\n\nNon-blocking get: dst holds the data after pld.system.quiet()."),
    {"put_signal", c_function(&put_signal_entry<kPutSignal, false>), METH_FASTCALL | METH_KEYWORDS,
     "put_signal(dst, peer, src[, dst_offsets, src_offsets, shape], signal, signal_offsets, value, op, *, atomic=..., "
     "chunk_rows=0, chunk_cols=0, pipeline=False)\n\nput, then notify(signal, peer, signal_offsets, value, op); a "
     "rank whose wait observes the signal sees the data."},
    {"put_signal_nbi", c_function(&put_signal_entry<kPutSignalNbi, true>), METH_FASTCALL | METH_KEYWORDS,
     "put_signal_nbi(dst, peer, src[, dst_offsets, src_offsets, shape], signal, signal_offsets, value, op, *, "
     "atomic=..., chunk_rows=0, chunk_cols=0, pipeline=False)\n\nNon-blocking put_signal: src is read until "
     "pld.system.quiet(); the signal still follows the data."},
};

void tensor_remote_store(py::handle src, py::handle dst, int peer, py::handle offsets, py::handle atomic_in) {
  const AtomicType atomic = enum_of<AtomicType>(atomic_in, "tensor::remote_store", "atomic");
  const char* api = "tensor::remote_store";
  if (is_window(src))
    throw UsageError("tensor::remote_store: src is a window view; a window source goes through tensor.put");
  const detail::LocalDesc s = local_of(src, api, "src");
  const detail::WindowDesc d = window_of(dst, api, "dst").desc();
  const Dims off = dims_of(offsets, api, "offsets");
  without_gil([&] { detail::remote_store(api, s, d, peer, off, atomic); });
}

}  // namespace

void bind_rma(py::module_& m) {
  auto t = m.def_submodule("_tensor", "pld.tensor's C++ half");
  add_fast_functions(t, g_rma_calls, std::size(g_rma_calls));
  t.def("remote_store", &tensor_remote_store, py::arg("src"), py::arg("dst"), py::arg("peer"), py::arg("offsets"),
        py::arg("atomic") = AtomicType::None,
        "src (a rank-local array, at least 2-D with leading dimensions 1) lands on the inner two dimensions of rank "
        "peer's dst at offsets.");
}

}  // namespace pld::python
