// pld.tile: tiles are numpy arrays. load / store between tiles and rank-local tensors or this
// rank's copy of a window, read / write of one element, remote_load / remote_store on a peer's
// copy. The element-wise arithmetic is numpy's (python/pld/tile.py).
#include "bindings.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>

#include <fmt/format.h>

#include <cstring>

namespace pld::python {

namespace {

Dims valid_of(py::handle valid, const Dims& shape, const char* api) {
  return valid.is_none() ? shape : detail::checked_valid(api, shape, dims_of(valid, api, "valid_shape"));
}

/// A zero-filled tile of `shape` whose valid box `probe_check` accepted (nothing is allocated for a bad call).
template <class Check>
std::pair<py::array, detail::LocalDesc> new_tile(const char* api, const Dims& shape, const Dims& valid, DType dtype,
                                                 Check&& check) {
  detail::tile_elements(api, shape, dtype_size(dtype));
  const detail::LocalDesc probe{nullptr, shape, dtype, valid};
  check(probe);
  std::vector<py::ssize_t> extents(shape.begin(), shape.end());
  py::array a(numpy_dtype(dtype), extents);
  std::memset(a.mutable_data(), 0, static_cast<std::size_t>(a.nbytes()));
  return {a, detail::LocalDesc{static_cast<std::byte*>(a.mutable_data()), shape, dtype, valid}};
}

py::array load(py::handle src, py::handle offsets, py::handle shape, py::handle valid_shape) {
  const char* api = "tile::load";
  const detail::LocalDesc s = local_of(src, api, "src");
  const Dims off = dims_of(offsets, api, "offsets");
  const Dims shp = dims_of(shape, api, "shape");
  auto [a, tile] = new_tile(api, shp, valid_of(valid_shape, shp, api), s.dtype,
                            [&](const detail::LocalDesc& probe) { detail::check_tile_load(api, probe, s, off); });
  detail::tile_load(api, tile, s, off);
  return a;
}

detail::LocalDesc tile_of(py::handle tile, py::handle valid_shape, const char* api) {
  detail::LocalDesc t = local_of(tile, api, "tile", false);
  t.valid = valid_of(valid_shape, t.shape, api);
  return t;
}

void store(py::handle tile, py::handle offsets, py::handle dst, py::handle valid_shape) {
  const char* api = "tile::store";
  detail::tile_store(api, tile_of(tile, valid_shape, api), local_of(dst, api, "dst"), dims_of(offsets, api, "offsets"));
}

py::object read(py::handle src, py::handle offsets) {
  const char* api = "tile::read";
  const detail::LocalDesc s = local_of(src, api, "src");
  py::array one(numpy_dtype(s.dtype), std::vector<py::ssize_t>{});
  detail::element_read(api, s, dims_of(offsets, api, "offsets"), one.mutable_data());
  if (s.dtype == DType::BF16) return py::float_(static_cast<float>(*static_cast<const bf16*>(one.data())));
  return one.attr("item")();
}

void write(py::handle dst, py::handle offsets, py::handle value) {
  const char* api = "tile::write";
  const detail::LocalDesc d = local_of(dst, api, "dst");
  py::array one;
  if (d.dtype == DType::BF16) {
    one = py::array(numpy_dtype(d.dtype), std::vector<py::ssize_t>{});
    *static_cast<bf16*>(one.mutable_data()) = bf16(value.cast<float>());
  } else {
    one = py::module_::import("numpy").attr("asarray")(value, numpy_dtype(d.dtype));
  }
  detail::element_write(api, d, dims_of(offsets, api, "offsets"), one.data());
}

py::array remote_load(py::handle src, int peer, py::handle offsets, py::handle shape, py::handle valid_shape) {
  const char* api = "tile::remote_load";
  const detail::WindowDesc s = window_of(src, api, "src").desc();
  const Dims off = dims_of(offsets, api, "offsets");
  const Dims shp = dims_of(shape, api, "shape");
  auto [a, tile] = new_tile(api, shp, valid_of(valid_shape, shp, api), s.dtype,
                            [&](const detail::LocalDesc& probe) { detail::check_remote_load(probe, s, peer, off); });
  without_gil([&] { detail::remote_load(tile, s, peer, off); });
  return a;
}

void tile_remote_store(py::handle tile, py::handle dst, int peer, py::handle offsets, py::handle atomic_in,
                       py::handle valid_shape) {
  const AtomicType atomic = enum_of<AtomicType>(atomic_in, "tile::remote_store", "atomic");
  const char* api = "tile::remote_store";
  const detail::LocalDesc t = tile_of(tile, valid_shape, api);
  const detail::WindowDesc d = window_of(dst, api, "dst").desc();
  const Dims off = dims_of(offsets, api, "offsets");
  without_gil([&] { detail::remote_store(api, t, d, peer, off, atomic); });
}

}  // namespace

void bind_tile(py::module_& m) {
  auto t = m.def_submodule("_tile", "pld.tile's C++ half");
  t.def("load", &load, py::arg("src"), py::arg("offsets"), py::arg("shape"), py::arg("valid_shape") = py::none(),
        "Loads the box [offsets, offsets + shape) of a rank-local array or this rank's window copy into a new tile "
        "(numpy array); with valid_shape only that leading part is read, the rest is zero.");
  t.def("store", &store, py::arg("tile"), py::arg("offsets"), py::arg("dst"), py::arg("valid_shape") = py::none(),
        "Stores the (valid part of the) tile at offsets of a rank-local array or this rank's window copy.");
  t.def("read", &read, py::arg("src"), py::arg("offsets"), "One element (bf16 as a float).");
  t.def("write", &write, py::arg("dst"), py::arg("offsets"), py::arg("value"), "Writes one element.");
  t.def("remote_load", &remote_load, py::arg("src"), py::arg("peer"), py::arg("offsets"), py::arg("shape"),
        py::arg("valid_shape") = py::none(), "Reads the box [offsets, offsets + shape) of rank peer's copy of src.");
  t.def("remote_store", &tile_remote_store, py::arg("tile"), py::arg("dst"), py::arg("peer"), py::arg("offsets"),
        py::arg("atomic") = AtomicType::None, py::arg("valid_shape") = py::none(),
        "Writes the tile into rank peer's copy of dst at offsets (AtomicType.Add: element-wise atomic add).");
}

}  // namespace pld::python
