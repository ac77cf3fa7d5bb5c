// pld.tensor's data movement: put / get (full-slice and region forms), remote_store, put_signal and
// the non-blocking put_nbi / get_nbi / put_signal_nbi. Options are keyword arguments (atomic,
// chunk_rows, chunk_cols, pipeline); the region form takes dst_offsets, src_offsets and shape
// (python/pld/tensor.py accepts them positionally, as in C++). Transfers release the GIL.
#include "bindings.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>
#include <pld/nbi.hpp>

#include <fmt/format.h>

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

Region region_of(const char* api, py::handle dst, py::handle src, py::handle shape) {
  const int given = !dst.is_none() + !src.is_none() + !shape.is_none();
  if (given == 0) return {};
  if (given != 3)
    throw UsageError(
        fmt::format("{}: the region form needs dst_offsets, src_offsets and shape together (got {} of "
                    "3); give all three or none",
                    api, given));
  return {dims_of(dst, api, "dst_offsets"), dims_of(src, api, "src_offsets"), dims_of(shape, api, "shape")};
}

void put(py::handle dst, int peer, py::handle src, py::handle dst_offsets, py::handle src_offsets, py::handle shape,
         py::handle atomic_in, Index chunk_rows, Index chunk_cols, bool pipeline, bool nbi) {
  const AtomicType atomic = enum_of<AtomicType>(atomic_in, "tensor::put", "atomic");
  const char* api = nbi ? "tensor::put_nbi" : "tensor::put";
  const detail::WindowDesc d = window_of(dst, api, "dst").desc();
  const detail::LocalDesc s = local_of(src, api, "src");
  const Region r = region_of(api, dst_offsets, src_offsets, shape);
  const PutOptions o{atomic, chunk_rows, chunk_cols, pipeline};
  without_gil([&] {
    if (nbi)
      detail::put_nbi(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
    else
      detail::put(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
  });
}

void get(py::handle dst, int peer, py::handle src, py::handle dst_offsets, py::handle src_offsets, py::handle shape,
         Index chunk_rows, Index chunk_cols, bool pipeline, bool nbi) {
  const char* api = nbi ? "tensor::get_nbi" : "tensor::get";
  const detail::LocalDesc d = local_of(dst, api, "dst");
  const detail::WindowDesc s = window_of(src, api, "src").desc();
  const Region r = region_of(api, dst_offsets, src_offsets, shape);
  const GetOptions o{chunk_rows, chunk_cols, pipeline};
  without_gil([&] {
    if (nbi)
      detail::get_nbi(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
    else
      detail::get(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), o);
  });
}

void put_signal(py::handle dst, int peer, py::handle src, py::handle signal, py::handle signal_offsets,
                std::int32_t value, py::handle op_in, py::handle dst_offsets, py::handle src_offsets, py::handle shape,
                py::handle atomic_in, Index chunk_rows, Index chunk_cols, bool pipeline, bool nbi) {
  const AtomicType atomic = enum_of<AtomicType>(atomic_in, "tensor::put_signal", "atomic");
  const NotifyOp op = enum_of<NotifyOp>(op_in, "tensor::put_signal", "op");
  const char* api = nbi ? "tensor::put_signal_nbi" : "tensor::put_signal";
  const detail::WindowDesc d = window_of(dst, api, "dst").desc();
  const detail::LocalDesc s = local_of(src, api, "src");
  const detail::WindowDesc sig = window_of(signal, api, "signal").desc();
  const Dims sig_off = dims_of(signal_offsets, api, "signal_offsets");
  const Region r = region_of(api, dst_offsets, src_offsets, shape);
  const PutOptions o{atomic, chunk_rows, chunk_cols, pipeline};
  without_gil([&] {
    detail::put_signal(d, peer, s, r.dst_ptr(), r.src_ptr(), r.shape_ptr(), detail::SignalArg{sig, sig_off, value, op},
                       o, nbi);
  });
}

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
  auto none = py::none();
  t.def("put", &put, py::arg("dst"), py::arg("peer"), py::arg("src"), py::arg("dst_offsets") = none,
        py::arg("src_offsets") = none, py::arg("shape") = none, py::arg("atomic") = AtomicType::None,
        py::arg("chunk_rows") = 0, py::arg("chunk_cols") = 0, py::arg("pipeline") = false, py::arg("nbi") = false);
  t.def("get", &get, py::arg("dst"), py::arg("peer"), py::arg("src"), py::arg("dst_offsets") = none,
        py::arg("src_offsets") = none, py::arg("shape") = none, py::arg("chunk_rows") = 0, py::arg("chunk_cols") = 0,
        py::arg("pipeline") = false, py::arg("nbi") = false);
  t.def("put_signal", &put_signal, py::arg("dst"), py::arg("peer"), py::arg("src"), py::arg("signal"),
        py::arg("signal_offsets"), py::arg("value"), py::arg("op"), py::arg("dst_offsets") = none,
        py::arg("src_offsets") = none, py::arg("shape") = none, py::arg("atomic") = AtomicType::None,
        py::arg("chunk_rows") = 0, py::arg("chunk_cols") = 0, py::arg("pipeline") = false, py::arg("nbi") = false);
  t.def("remote_store", &tensor_remote_store, py::arg("src"), py::arg("dst"), py::arg("peer"), py::arg("offsets"),
        py::arg("atomic") = AtomicType::None,
        "src (a rank-local array, at least 2-D with leading dimensions 1) lands on the inner two dimensions of rank "
        "peer's dst at offsets.");
}

}  // namespace pld::python
