// pld — the kernel side: what runs inside a rank process.
//
//   pld::system  get_comm_ctx, rank, nranks, notify, wait (signal_fetch, test and the waits on
//                several cells: signal.hpp)
//   pld::tile    load, store, read, write, add/sub/mul/max/min, remote_load, remote_store
//   pld::tensor  put, get, remote_store
//   (put_signal, the non-blocking put_nbi / get_nbi / put_signal_nbi and quiet / fence: nbi.hpp)
//
// Memory order (DESIGN §4): every write a rank makes before a notify (store, put, remote_store,
// plain writes into a window) is visible to a rank whose wait observed that notify. notify is a
// release, wait an acquire; nothing else orders windows across ranks.
//
// Every function validates its arguments and throws pld::UsageError naming the operation, the bad
// value and the fix; the runtime carries it to the host caller with the rank number.
#pragma once

#include <pld/comm_domain.hpp>
#include <pld/detail/kernel.hpp>
#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pld {

/// A rank-local block of values (the model's on-chip tile): `shape` elements, of which the
/// leading `valid_shape` box holds data. Elements outside the valid box are zero.
template <Element T>
class Tile {
 public:
  Tile() = default;
  explicit Tile(const Dims& shape) : Tile(shape, shape) {}
  Tile(const Dims& shape, const Dims& valid_shape)
      : shape_(shape),
        valid_(detail::checked_valid("Tile", shape, valid_shape)),
        data_(detail::tile_storage<T>("Tile", shape)) {}

  /// Shape, valid box, element count and element type.
  const Dims& shape() const { return shape_; }
  const Dims& valid_shape() const { return valid_; }
  Index numel() const { return shape_.numel(); }
  static constexpr DType dtype() { return dtype_of<T>; }
  /// The elements, row-major over shape().
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  /// Checked element access: `t.at({r, c})` or `t(r, c)`; throws UsageError outside shape().
  T& at(const Dims& index) { return data_[detail::linear_index("Tile::at", index, shape_)]; }
  const T& at(const Dims& index) const { return data_[detail::linear_index("Tile::at", index, shape_)]; }
  template <class... I>
  requires(std::is_integral_v<I>&&...) T& operator()(I... index) { return at(Dims{static_cast<Index>(index)...}); }

 private:
  Dims shape_, valid_;
  std::vector<T> data_;
};

/// Options of tensor::put. `chunk_rows` / `chunk_cols` bound the block moved at a time (0 = the
/// whole transfer, oversize is clamped); `pipeline` overlaps consecutive chunks and needs both.
struct PutOptions {
  AtomicType atomic = AtomicType::None;
  Index chunk_rows = 0;
  Index chunk_cols = 0;
  bool pipeline = false;
};

/// Options of tensor::get (a get has no atomic form).
struct GetOptions {
  Index chunk_rows = 0;
  Index chunk_cols = 0;
  bool pipeline = false;
};

// ---------------------------------------------------------------------------------------------
namespace system {

/// The comm context of the domain that `dt`'s window belongs to.
template <class T>
CommCtx get_comm_ctx(const DistributedTensor<T>& dt) {
  return detail::comm_ctx("get_comm_ctx", dt.state());
}
/// Domain-local rank of the calling process.
inline int rank(const CommCtx& ctx) {
  return ctx.rank();
}
/// Number of ranks in the domain.
inline int nranks(const CommCtx& ctx) {
  return ctx.nranks();
}

/// On rank `peer`'s copy of `signal`, at `offsets`: Set stores `value`, AtomicAdd atomically adds
/// it (negative values allowed). A release: every earlier write of this rank is visible to a rank
/// whose wait observes this notify. `peer` may be the calling rank.
inline void notify(const DistributedTensor<std::int32_t>& signal, int peer, const Dims& offsets, std::int32_t value,
                   NotifyOp op) {
  detail::notify(detail::desc(signal), peer, offsets, value, op);
}

/// Blocks until the local `signal[offsets]` compares `cmp` against `expected` (signed int32).
/// An acquire. Spins briefly, then sleeps; fails with a report of every rank's wait at the
/// deadline (PLD_WAIT_TIMEOUT / DistributedConfig::wait_timeout).
inline void wait(const DistributedTensor<std::int32_t>& signal, const Dims& offsets, std::int32_t expected,
                 WaitCmp cmp) {
  detail::wait(detail::desc(signal), offsets, expected, cmp);
}

}  // namespace system

using system::get_comm_ctx;
using system::nranks;
using system::rank;

// ---------------------------------------------------------------------------------------------
namespace tile {

/// Loads the box `[offsets, offsets + shape)` of a rank-local tensor into a tile. With a
/// `valid_shape`, only that leading part is read (the rest of the tile is zero).
template <class T>
Tile<T> load(const Tensor<T>& src, const Dims& offsets, const Dims& shape, const Dims& valid_shape) {
  return detail::load_tile<T>(detail::desc(src), offsets, shape, valid_shape);
}
template <class T>
Tile<T> load(const Tensor<T>& src, const Dims& offsets, const Dims& shape) {
  return load(src, offsets, shape, shape);
}
/// Loads from the calling rank's own copy of a window.
template <class T>
Tile<T> load(const DistributedTensor<T>& src, const Dims& offsets, const Dims& shape, const Dims& valid_shape) {
  return detail::load_tile<T>(detail::window_local("tile::load", detail::desc(src)), offsets, shape, valid_shape);
}
template <class T>
Tile<T> load(const DistributedTensor<T>& src, const Dims& offsets, const Dims& shape) {
  return load(src, offsets, shape, shape);
}

/// Stores the valid part of `tile` at `offsets` of a rank-local tensor or of the calling rank's
/// own window. A tile of lower rank lands on the trailing dimensions.
template <class T>
void store(const Tile<T>& tile, const Dims& offsets, const Tensor<T>& dst) {
  detail::tile_store("tile::store", detail::desc(tile), detail::desc(dst), offsets);
}
template <class T>
void store(const Tile<T>& tile, const Dims& offsets, const DistributedTensor<T>& dst) {
  detail::tile_store("tile::store", detail::desc(tile), detail::window_local("tile::store", detail::desc(dst)),
                     offsets);
}

/// One element (the model's pl.read / pl.write).
template <class T>
T read(const Tensor<T>& src, const Dims& offsets) {
  T v;
  detail::element_read("tile::read", detail::desc(src), offsets, &v);
  return v;
}
template <class T>
T read(const DistributedTensor<T>& src, const Dims& offsets) {
  T v;
  detail::element_read("tile::read", detail::window_local("tile::read", detail::desc(src)), offsets, &v);
  return v;
}
template <class T>
void write(const Tensor<T>& dst, const Dims& offsets, T value) {
  detail::element_write("tile::write", detail::desc(dst), offsets, &value);
}
template <class T>
void write(const DistributedTensor<T>& dst, const Dims& offsets, T value) {
  detail::element_write("tile::write", detail::window_local("tile::write", detail::desc(dst)), offsets, &value);
}

/// Element-wise arithmetic on tiles of equal shape (fp16/bf16 computed in float, rounded once;
/// integers wrap). max/min with a NaN operand return the second operand, as the collectives do.
template <class T>
Tile<T> add(const Tile<T>& a, const Tile<T>& b) {
  return detail::elementwise("tile::add", a, b, detail::Arith<T>::add);
}
template <class T>
Tile<T> sub(const Tile<T>& a, const Tile<T>& b) {
  return detail::elementwise("tile::sub", a, b, detail::Arith<T>::sub);
}
template <class T>
Tile<T> mul(const Tile<T>& a, const Tile<T>& b) {
  return detail::elementwise("tile::mul", a, b, detail::Arith<T>::mul);
}
template <class T>
Tile<T> max(const Tile<T>& a, const Tile<T>& b) {
  return detail::elementwise("tile::max", a, b, detail::Arith<T>::max);
}
template <class T>
Tile<T> min(const Tile<T>& a, const Tile<T>& b) {
  return detail::elementwise("tile::min", a, b, detail::Arith<T>::min);
}

/// A tile of `shape` with every element `value` (valid everywhere).
template <class T>
Tile<T> full(const Dims& shape, T value) {
  Tile<T> t(shape);
  std::fill(t.data(), t.data() + t.numel(), value);
  return t;
}

/// Tile-with-scalar forms: `tile::add(t, 1.0f)`, `tile::mul(t, 2)`, ...
template <class T>
Tile<T> add(const Tile<T>& a, std::type_identity_t<T> b) {
  return add(a, full<T>(a.shape(), b));
}
template <class T>
Tile<T> sub(const Tile<T>& a, std::type_identity_t<T> b) {
  return sub(a, full<T>(a.shape(), b));
}
template <class T>
Tile<T> mul(const Tile<T>& a, std::type_identity_t<T> b) {
  return mul(a, full<T>(a.shape(), b));
}
template <class T>
Tile<T> max(const Tile<T>& a, std::type_identity_t<T> b) {
  return max(a, full<T>(a.shape(), b));
}
template <class T>
Tile<T> min(const Tile<T>& a, std::type_identity_t<T> b) {
  return min(a, full<T>(a.shape(), b));
}

/// Reads the box `[offsets, offsets + shape)` of rank `peer`'s copy of `src` (peer is
/// domain-local; the calling rank is allowed). `valid_shape` limits what is read, so a box that
/// overhangs the window's end is legal when the valid part fits.
template <class T>
Tile<T> remote_load(const DistributedTensor<T>& src, int peer, const Dims& offsets, const Dims& shape,
                    const Dims& valid_shape) {
  const detail::WindowDesc& s = detail::desc(src);
  Tile<T> t = detail::checked_tile<T>("tile::remote_load", shape, valid_shape, [&](const detail::LocalDesc& probe) {
    detail::check_remote_load(probe, s, peer, offsets);
  });
  auto d = detail::desc(t);
  detail::remote_load(d, s, peer, offsets);
  return t;
}
template <class T>
Tile<T> remote_load(const DistributedTensor<T>& src, int peer, const Dims& offsets, const Dims& shape) {
  return remote_load(src, peer, offsets, shape, shape);
}

/// Writes the valid part of `tile` into rank `peer`'s copy of `dst` at `offsets`; the 2-D tile
/// lands on the inner two dimensions (leading dimensions get extent 1). With AtomicType::Add the
/// peer's elements are incremented atomically (fp32, fp16, bf16, int32, int16, int8).
template <class T>
void remote_store(const Tile<T>& tile, const DistributedTensor<T>& dst, int peer, const Dims& offsets,
                  AtomicType atomic = AtomicType::None) {
  detail::remote_store("tile::remote_store", detail::desc(tile), detail::desc(dst), peer, offsets, atomic);
}

}  // namespace tile

using tile::remote_load;

// ---------------------------------------------------------------------------------------------
namespace tensor {

/// Push: copies `src` (a rank-local tensor or this rank's copy of a window) into rank `peer`'s
/// copy of `dst`. The full-slice form needs equal shapes; the region form copies `shape` from
/// `src_offsets` to `dst_offsets`. With `.atomic = AtomicType::Add` the peer's elements are
/// incremented atomically. Synchronous for the sender; pair it with notify / wait.
template <class T>
void put(const DistributedTensor<T>& dst, int peer, const Tensor<T>& src, const PutOptions& options = {}) {
  detail::put(detail::PutCall{detail::view_ref(dst), peer, detail::local_ref(src), &options, false});
}
template <class T>
void put(const DistributedTensor<T>& dst, int peer, const DistributedTensor<T>& src, const PutOptions& options = {}) {
  detail::put(detail::PutCall{detail::view_ref(dst), peer, detail::local_ref(src), &options, false});
}
template <class T>
void put(const DistributedTensor<T>& dst, int peer, const Tensor<T>& src, const Dims& dst_offsets,
         const Dims& src_offsets, const Dims& shape, const PutOptions& options = {}) {
  detail::put(detail::desc(dst), peer, detail::desc(src), &dst_offsets, &src_offsets, &shape, options);
}
template <class T>
void put(const DistributedTensor<T>& dst, int peer, const DistributedTensor<T>& src, const Dims& dst_offsets,
         const Dims& src_offsets, const Dims& shape, const PutOptions& options = {}) {
  detail::put(detail::desc(dst), peer, detail::window_local("tensor::put", detail::desc(src)), &dst_offsets,
              &src_offsets, &shape, options);
}

/// Pull: copies rank `peer`'s copy of `src` into `dst` (rank-local tensor or this rank's window).
/// The source rank must have published and signalled before the reader gets.
template <class T>
void get(const Tensor<T>& dst, int peer, const DistributedTensor<T>& src, const GetOptions& options = {}) {
  detail::get(detail::GetCall{detail::local_ref(dst), peer, detail::view_ref(src), &options, false});
}
template <class T>
void get(const DistributedTensor<T>& dst, int peer, const DistributedTensor<T>& src, const GetOptions& options = {}) {
  detail::get(detail::GetCall{detail::local_ref(dst), peer, detail::view_ref(src), &options, false});
}
template <class T>
void get(const Tensor<T>& dst, int peer, const DistributedTensor<T>& src, const Dims& dst_offsets,
         const Dims& src_offsets, const Dims& shape, const GetOptions& options = {}) {
  detail::get(detail::desc(dst), peer, detail::desc(src), &dst_offsets, &src_offsets, &shape, options);
}
template <class T>
void get(const DistributedTensor<T>& dst, int peer, const DistributedTensor<T>& src, const Dims& dst_offsets,
         const Dims& src_offsets, const Dims& shape, const GetOptions& options = {}) {
  detail::get(detail::window_local("tensor::get", detail::desc(dst)), peer, detail::desc(src), &dst_offsets,
              &src_offsets, &shape, options);
}

/// Tensor form of remote_store: `src` (at least 2-D, leading dimensions 1) lands on the inner two
/// dimensions of rank `peer`'s `dst` at `offsets`. A window source is refused: use tensor::put.
template <class T>
void remote_store(const Tensor<T>& src, const DistributedTensor<T>& dst, int peer, const Dims& offsets,
                  AtomicType atomic = AtomicType::None) {
  detail::remote_store("tensor::remote_store", detail::desc(src), detail::desc(dst), peer, offsets, atomic);
}

}  // namespace tensor

}  // namespace pld
