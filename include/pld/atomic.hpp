// pld — atomics on window cells: what runs inside a rank process (the kernel side), next to
// notify / wait (kernel.hpp).
//
//   fetching (return the cell's old value)   atomic_fetch, atomic_fetch_add, atomic_fetch_inc,
//                                            atomic_swap, atomic_compare_swap,
//                                            atomic_fetch_and, atomic_fetch_or, atomic_fetch_xor
//   non-fetching                             atomic_set, atomic_add, atomic_inc,
//                                            atomic_and, atomic_or, atomic_xor
//
// A cell is one element of a window, `DistributedTensor<T>` with T = int32_t, int64_t, uint32_t or
// uint64_t, on rank `peer` (domain-local; the calling rank is allowed) at `offsets` — addressed
// exactly as notify addresses a signal cell. Arithmetic wraps (two's complement), as
// std::atomic's does.
//
// Atomicity: every atomic is indivisible with respect to every other atomic on the same cell,
// from any rank and any thread, and on int32 cells also to notify and to put / remote_store with
// AtomicType::Add. Plain accesses of the cell (tile::read / write, put, get) are not atomic with
// respect to them.
//
// Memory order: every atomic is one sequentially consistent read-modify-write of the cell, both a
// release and an acquire. Release: every write the calling rank made before it (stores, put,
// remote_store, to any peer) is visible to a rank that observes its effect on the cell (through
// an atomic, or a wait on an int32 cell). Acquire: after it returns, the calling rank sees every
// write made before the atomics and notifies whose effect on the cell it observed. Each call is
// complete at the target when it returns. On an int32 cell an atomic that changes the value
// wakes a rank waiting on it, as notify does.
//
// Every function validates its arguments and throws pld::UsageError naming the operation, the bad
// value and the fix: a dtype without atomics, a peer outside the comm domain, a cell outside the
// window or not naturally aligned, a view not bound to a comm domain (or a call outside a kernel).
#pragma once

#include <pld/detail/atomic.hpp>
#include <pld/detail/kernel.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pld {

namespace detail {
/// One atomic as the templates hand it over: the window view's parts by address (nothing of the
/// view is copied on the way), the operation and the cell.
struct AmoCall {
  const char* api;
  const DomainState* state;
  const WindowRef* ref;
  const Dims* shape;
  const Dims* offsets;
  int peer;
  DType dtype;
  AmoOp op;
};
/// The entry of every atomic whose operation is known only at run time (the Python binding):
/// validates, records, runs the operation on the cell, returns the old value's bits (atomic.cc).
PLD_API std::uint64_t atomic(const AmoCall& call, std::uint64_t operand, std::uint64_t compare);
/// The same for operation `Op` on a cell `Width` bytes wide (4 or 8): `call.op` is `Op` and
/// `call.dtype` a dtype of that width (any other dtype fails as atomic() fails). The templates
/// below call it, so that the library's code for one call is that operation's alone, with no
/// branch on the operation or the width. Defined in atomic.cc for every AmoOp and both widths.
template <AmoOp Op, std::size_t Width>
PLD_API std::uint64_t atomic_as(const AmoCall& call, std::uint64_t operand, std::uint64_t compare);

template <AmoOp Op, class T>
T atomic_op(const char* api, const DistributedTensor<T>& t, int peer, const Dims& offsets, T operand = T{},
            T compare = T{}) {
  constexpr DType kDType = dtype_of<T>;
  const AmoCall call{api, t.state(), &t.ref(), &t.shape(), &offsets, peer, kDType, Op};
  return amo_value<T>(atomic_as<Op, amo_width(kDType)>(call, amo_bits(operand), amo_bits(compare)));
}
}  // namespace detail

namespace system {

/// The value of rank `peer`'s cell `t[offsets]`, read atomically.
template <class T>
T atomic_fetch(const DistributedTensor<T>& t, int peer, const Dims& offsets) {
  return detail::atomic_op<detail::AmoOp::Fetch>("atomic_fetch", t, peer, offsets);
}
/// Adds `value` to the cell; returns the old value.
template <class T>
T atomic_fetch_add(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  return detail::atomic_op<detail::AmoOp::Add>("atomic_fetch_add", t, peer, offsets, value);
}
/// Adds 1 to the cell; returns the old value.
template <class T>
T atomic_fetch_inc(const DistributedTensor<T>& t, int peer, const Dims& offsets) {
  return detail::atomic_op<detail::AmoOp::Add>("atomic_fetch_inc", t, peer, offsets, static_cast<T>(1));
}
/// Stores `value` in the cell; returns the old value.
template <class T>
T atomic_swap(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  return detail::atomic_op<detail::AmoOp::Swap>("atomic_swap", t, peer, offsets, value);
}
/// Stores `desired` in the cell if it holds `expected`; returns the old value either way (the
/// swap happened when the result equals `expected`).
template <class T>
T atomic_compare_swap(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> expected,
                      std::type_identity_t<T> desired) {
  return detail::atomic_op<detail::AmoOp::CompareSwap>("atomic_compare_swap", t, peer, offsets, desired, expected);
}
/// Bitwise and / or / xor of `value` into the cell; each returns the old value.
template <class T>
T atomic_fetch_and(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  return detail::atomic_op<detail::AmoOp::And>("atomic_fetch_and", t, peer, offsets, value);
}
template <class T>
T atomic_fetch_or(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  return detail::atomic_op<detail::AmoOp::Or>("atomic_fetch_or", t, peer, offsets, value);
}
template <class T>
T atomic_fetch_xor(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  return detail::atomic_op<detail::AmoOp::Xor>("atomic_fetch_xor", t, peer, offsets, value);
}

/// The non-fetching forms: the same operations without the old value.
template <class T>
void atomic_set(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  detail::atomic_op<detail::AmoOp::Set>("atomic_set", t, peer, offsets, value);
}
template <class T>
void atomic_add(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  detail::atomic_op<detail::AmoOp::Add>("atomic_add", t, peer, offsets, value);
}
template <class T>
void atomic_inc(const DistributedTensor<T>& t, int peer, const Dims& offsets) {
  detail::atomic_op<detail::AmoOp::Add>("atomic_inc", t, peer, offsets, static_cast<T>(1));
}
template <class T>
void atomic_and(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  detail::atomic_op<detail::AmoOp::And>("atomic_and", t, peer, offsets, value);
}
template <class T>
void atomic_or(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  detail::atomic_op<detail::AmoOp::Or>("atomic_or", t, peer, offsets, value);
}
template <class T>
void atomic_xor(const DistributedTensor<T>& t, int peer, const Dims& offsets, std::type_identity_t<T> value) {
  detail::atomic_op<detail::AmoOp::Xor>("atomic_xor", t, peer, offsets, value);
}

}  // namespace system

}  // namespace pld
