// pld — put-with-signal and non-blocking transfers (kernel side).
//
//   pld::tensor  put_signal, put_nbi, get_nbi, put_signal_nbi
//   pld::system  quiet, fence
//
// put_signal is tensor::put followed by system::notify on the same peer, in one call: a rank whose
// wait observes the signal sees the data. The signal is a notify in every respect, so it is also a
// release of every earlier write of the calling rank (DESIGN §4).
//
// The non-blocking forms take the arguments of their blocking forms and may return before the
// transfer completes:
//   * a put_nbi's source is read until the transfer completes: do not change it before
//     system::quiet() (debug mode, PLD_DEBUG=1, checksums every non-blocking put's source when it
//     is issued and fails quiet with a UsageError naming the put when the source changed);
//   * a get_nbi's destination holds the data only after system::quiet(); reading it earlier
//     (tile::load, tile::read, the source of a put) reads whatever it held (debug mode fails the
//     read with a UsageError naming the read and the get);
//   * system::quiet() completes every outstanding transfer of the calling rank: puts are at their
//     targets, gets in their destinations, sources free;
//   * system::fence() orders the calling rank's earlier puts to each peer before its later puts to
//     the same peer; it completes nothing;
//   * system::notify is a release of earlier non-blocking puts too: a rank whose wait observes the
//     notify sees their data (to any peer) — but their sources stay in use until quiet;
//   * a kernel that returns with transfers outstanding completes them as it returns (an implicit
//     quiet), so a dispatch's transfers are complete when the dispatch is.
// Where transfers complete at once (the shm backend and peers on the same node: copies), the
// non-blocking forms cost what the blocking ones do and quiet and fence are memory fences.
//
// Every function validates its arguments as its blocking form does and throws pld::UsageError
// naming the operation, the bad value and the fix; quiet and fence outside a kernel included.
#pragma once

#include <pld/kernel.hpp>

#include <concepts>
#include <cstdint>

namespace pld {

namespace detail {

/// A rank-local operand of a put's source or a get's destination: a rank-local tensor or the
/// calling rank's own copy of a window.
template <class S, class T>
concept LocalOperand = std::same_as<S, Tensor<T>> || std::same_as<S, DistributedTensor<T>>;

template <class T>
LocalDesc local_operand(const char*, const Tensor<T>& t) {
  return desc(t);
}
template <class T>
LocalDesc local_operand(const char* api, const DistributedTensor<T>& t) {
  return window_local(api, desc(t));
}

PLD_API void put_nbi(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets,
                     const Dims* src_offsets, const Dims* shape, const PutOptions& options);
PLD_API void get_nbi(const LocalDesc& dst, int peer, const WindowDesc& src, const Dims* dst_offsets,
                     const Dims* src_offsets, const Dims* shape, const GetOptions& options);
/// The signal of a put_signal: cell `offsets` of `window`, updated by `op` with `value`.
struct SignalArg {
  const WindowDesc& window;
  const Dims& offsets;
  std::int32_t value;
  NotifyOp op;
};
/// put_signal on descriptors (the Python bindings), every check on every call.
PLD_API void put_signal(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets,
                        const Dims* src_offsets, const Dims* shape, const SignalArg& signal, const PutOptions& options,
                        bool nbi);

/// A put_signal as the templates hand it over: every operand by address (the region pointers
/// all nullptr for the full-slice form).
struct PutSignalCall {
  ViewRef dst;
  int peer;
  LocalRef src;
  const Dims* dst_offsets;
  const Dims* src_offsets;
  const Dims* shape;
  ViewRef signal;
  const Dims* signal_offsets;
  std::int32_t value;
  NotifyOp op;
  const PutOptions* options;
  bool nbi;
};
/// The one entry of the put_signal templates: validates, records, moves the data and the signal.
PLD_API void put_signal(const PutSignalCall& call);

PLD_API void quiet();
PLD_API void fence();

}  // namespace detail

// ---------------------------------------------------------------------------------------------
namespace tensor {

/// tensor::put, then notify(signal, peer, signal_offsets, value, op): a rank whose wait observes
/// the signal sees the data. `signal` is a window of dst's comm domain. Full-slice form.
template <class T, detail::LocalOperand<T> Src>
void put_signal(const DistributedTensor<T>& dst, int peer, const Src& src,
                const DistributedTensor<std::int32_t>& signal, const Dims& signal_offsets, std::int32_t value,
                NotifyOp op, const PutOptions& options = {}) {
  detail::put_signal(detail::PutSignalCall{detail::view_ref(dst), peer, detail::local_ref(src), nullptr, nullptr,
                                           nullptr, detail::view_ref(signal), &signal_offsets, value, op, &options,
                                           false});
}
/// Region form: `shape` from `src_offsets` of src to `dst_offsets` of the peer's dst, then the signal.
template <class T, detail::LocalOperand<T> Src>
void put_signal(const DistributedTensor<T>& dst, int peer, const Src& src, const Dims& dst_offsets,
                const Dims& src_offsets, const Dims& shape, const DistributedTensor<std::int32_t>& signal,
                const Dims& signal_offsets, std::int32_t value, NotifyOp op, const PutOptions& options = {}) {
  detail::put_signal(detail::PutSignalCall{detail::view_ref(dst), peer, detail::local_ref(src), &dst_offsets,
                                           &src_offsets, &shape, detail::view_ref(signal), &signal_offsets, value, op,
                                           &options, false});
}

/// Non-blocking put_signal: the data and the signal may still be in flight when it returns, and
/// `src` is read until system::quiet(). The signal still follows the data.
template <class T, detail::LocalOperand<T> Src>
void put_signal_nbi(const DistributedTensor<T>& dst, int peer, const Src& src,
                    const DistributedTensor<std::int32_t>& signal, const Dims& signal_offsets, std::int32_t value,
                    NotifyOp op, const PutOptions& options = {}) {
  detail::put_signal(detail::PutSignalCall{detail::view_ref(dst), peer, detail::local_ref(src), nullptr, nullptr,
                                           nullptr, detail::view_ref(signal), &signal_offsets, value, op, &options,
                                           true});
}
template <class T, detail::LocalOperand<T> Src>
void put_signal_nbi(const DistributedTensor<T>& dst, int peer, const Src& src, const Dims& dst_offsets,
                    const Dims& src_offsets, const Dims& shape, const DistributedTensor<std::int32_t>& signal,
                    const Dims& signal_offsets, std::int32_t value, NotifyOp op, const PutOptions& options = {}) {
  detail::put_signal(detail::PutSignalCall{detail::view_ref(dst), peer, detail::local_ref(src), &dst_offsets,
                                           &src_offsets, &shape, detail::view_ref(signal), &signal_offsets, value, op,
                                           &options, true});
}

/// Non-blocking tensor::put: complete at system::quiet(); `src` is read until then.
template <class T, detail::LocalOperand<T> Src>
void put_nbi(const DistributedTensor<T>& dst, int peer, const Src& src, const PutOptions& options = {}) {
  detail::put(detail::PutCall{detail::view_ref(dst), peer, detail::local_ref(src), &options, true});
}
template <class T, detail::LocalOperand<T> Src>
void put_nbi(const DistributedTensor<T>& dst, int peer, const Src& src, const Dims& dst_offsets,
             const Dims& src_offsets, const Dims& shape, const PutOptions& options = {}) {
  detail::put_nbi(detail::desc(dst), peer, detail::local_operand("tensor::put_nbi", src), &dst_offsets, &src_offsets,
                  &shape, options);
}

/// Non-blocking tensor::get: `dst` holds the peer's data after system::quiet().
template <class T, detail::LocalOperand<T> Dst>
void get_nbi(const Dst& dst, int peer, const DistributedTensor<T>& src, const GetOptions& options = {}) {
  detail::get(detail::GetCall{detail::local_ref(dst), peer, detail::view_ref(src), &options, true});
}
template <class T, detail::LocalOperand<T> Dst>
void get_nbi(const Dst& dst, int peer, const DistributedTensor<T>& src, const Dims& dst_offsets,
             const Dims& src_offsets, const Dims& shape, const GetOptions& options = {}) {
  detail::get_nbi(detail::local_operand("tensor::get_nbi", dst), peer, detail::desc(src), &dst_offsets, &src_offsets,
                  &shape, options);
}

}  // namespace tensor

// ---------------------------------------------------------------------------------------------
namespace system {

/// Completes every outstanding transfer of the calling rank (put_nbi, get_nbi, put_signal_nbi,
/// and the remote completion of earlier blocking puts): puts are at their targets and their
/// sources free, gets are in their destinations. In debug mode it also checks that no
/// non-blocking put's source changed since it was issued.
inline void quiet() {
  detail::quiet();
}

/// Orders the calling rank's puts: those issued before the fence reach each peer before those
/// issued after it to the same peer. Completes nothing (see quiet).
inline void fence() {
  detail::fence();
}

}  // namespace system

}  // namespace pld
