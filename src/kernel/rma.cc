// One-sided transfers between a rank-local array and a peer's copy of a window: tensor::put
// (push) and tensor::get (pull), their non-blocking forms and put_signal (tile::remote_load /
// remote_store: remote_tile.cc). Every form checks its operands (put_signal its signal cell
// first), records the operation (backend/op_history.h), and moves the addressed box in runs of
// contiguous elements through the backend (rma.h, backend/*/rma.cc); a whole-window put or get
// with a member whose heap this process addresses is the copy itself where the backend's call is
// nothing more (Backend::cpu_copies: shm, and the mpi backend's on-node members). put_signal
// hands its last run to the backend together with the signal (Backend::put_signal), so a backend
// can send both at once; its common case on a backend whose put_signal is CPU work on
// addressable memory (Backend::cpu_put_signal: shm) runs inline instead, with one pass of checks
// and one record (put_signal_inline), and so do full-slice puts and gets (transfer_inline). In debug mode
// a non-blocking put's source runs are checksummed and a non-blocking get's destination runs
// remembered until quiet, and a put whose source is such a destination fails (rank/nbi.h).
#include "kernel/rma.h"
#include "backend/amo.h"
#include "core/copy.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "kernel/region.h"
#include "kernel/signal.h"
#include "rank/runtime.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>
#include <pld/nbi.hpp>

#include <fmt/format.h>

namespace pld::detail {

void record(const char* api, OpKind kind, AtomicType atomic, const DomainState& d, int world_peer, const WindowDesc& w,
            Index bytes, const Dims* offsets) {
  if (debug_checks()) debug_check_view(api, w);
  d.backend->record_op(kind, static_cast<std::uint8_t>(atomic), world_peer, saturate(bytes), w.ref.domain, w.ref.buffer,
                       w.ref.offset, offsets);
}

void race_runs(const char* api, Direction dir, AtomicType atomic, int world_peer, const Run& run) {
  const bool to_peer = dir == Direction::ToPeer;
  const RaceKind remote = !to_peer ? RaceKind::Read : atomic == AtomicType::Add ? RaceKind::Atomic : RaceKind::Write;
  race_window(api, remote, world_peer, run.offset, run.bytes);
  race_local(api, to_peer ? RaceKind::Read : RaceKind::Write, run.local, run.bytes);
}

Run move_boxes(const DomainState& d, int world_peer, Direction dir, const Issue& how, const WindowDesc& w,
               const Box& wbox, std::byte* local, const Box& lbox, Index chunk_rows, Index chunk_cols) {
  const std::size_t esz = dtype_size(w.dtype);
  Backend& b = *d.backend;
  Run held;
  for_each_run(wbox.shape, wbox.offsets, wbox.extent, lbox.shape, lbox.offsets, lbox.extent, chunk_rows, chunk_cols,
               [&](Index wi, Index li, Index n) {
                 const Run run{w.ref.offset + static_cast<std::uint64_t>(wi) * esz,
                               local + li * static_cast<Index>(esz), static_cast<std::size_t>(n) * esz};
                 if (how.spans) how.spans->emplace_back(run.local, run.bytes);
                 if (race_on()) [[unlikely]]
                   race_runs(how.api, dir, how.atomic, world_peer, run);
                 if (dir == Direction::FromPeer) {
                   if (how.nbi)
                     b.get_nbi(run.local, world_peer, run.offset, run.bytes);
                   else
                     b.get(run.local, world_peer, run.offset, run.bytes);
                 } else if (how.atomic == AtomicType::Add) {
                   b.atomic_add(world_peer, run.offset, run.local, run.bytes / esz, w.dtype);
                 } else {
                   Run now = run;
                   if (how.hold_last) std::swap(now, held);  // hold this run back, move the one held before
                   if (now.bytes == 0) return;
                   if (how.nbi)
                     b.put_nbi(world_peer, now.offset, now.local, now.bytes);
                   else
                     b.put(world_peer, now.offset, now.local, now.bytes);
                 }
               });
  return held;
}

namespace {

/// A put or a get: `window` is the peer's side (put's dst, get's src), `local` this rank's.
/// `signal` / `cell`: put_signal's signal, already checked.
struct Transfer {
  const char* api;
  Direction dir;
  const WindowDesc& window;
  int peer;
  const LocalDesc& local;
  const Dims* window_offsets;
  const Dims* local_offsets;
  const Dims* shape;
  AtomicType atomic;
  Index chunk_rows;
  Index chunk_cols;
  bool pipeline;
  bool nbi = false;
  const SignalArg* signal = nullptr;
  const SignalCell* cell = nullptr;
};

/// Equal extents, compared inline (the fast path's shapes have a few dimensions).
bool same_dims(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

/// A plain copy: no atomic add, no chunking, no pipeline.
bool plain_copy(AtomicType atomic, Index chunk_rows, Index chunk_cols, bool pipeline) {
  return atomic == AtomicType::None && chunk_rows == 0 && chunk_cols == 0 && !pipeline;
}

// The common case — whole tensor, same shape and dtype, plain copy, no chunking — goes straight to
// the backend; anything else (including every error) takes the checked general path.
bool plain_full_slice(const Transfer& t) {
  const WindowDesc& w = t.window;
  return !t.shape && w.state && t.peer >= 0 && t.peer < w.state->nranks() && w.dtype == t.local.dtype &&
         plain_copy(t.atomic, t.chunk_rows, t.chunk_cols, t.pipeline) && same_dims(w.shape, t.local.shape);
}

/// put_signal's signal, with `held` (the last run of the data, if any) travelling with it.
inline void send_signal(const Transfer& t, int world_peer, const Run& held) {
  const SignalArg& s = *t.signal;
  const SignalCell& cell = *t.cell;
  const std::int64_t t0 = notify_begin(s.window, t.peer, s.offsets, cell, s.value, s.op);
  Backend& b = *t.window.state->backend;
  auto send = [&] {
    if (held.bytes)
      b.put_signal(world_peer, held.offset, held.local, held.bytes, cell.offset, s.value, s.op, t.nbi);
    else
      b.notify(cell.target, cell.offset, s.value, s.op);
  };
  if (race_on()) [[unlikely]] {
    const RaceRelease release(cell.target, cell.offset, s.op == NotifyOp::Set);
    send();
  } else {
    send();
  }
  notify_end(s.window, cell, s.value, s.op, t0);
}

/// Books a non-blocking transfer: outstanding until quiet, and in debug mode a put's source or a
/// get's destination.
void book_nbi(const Transfer& t, NbiLedger::Spans* spans, Index bytes) {
  NbiLedger& ledger = RankRuntime::get(t.api).nbi();
  ledger.issued();
  if (!spans || spans->empty()) return;
  const bool to_peer = t.dir == Direction::ToPeer;
  std::string what = fmt::format("{} {} peer {} of window '{}' ({} bytes)", t.api, to_peer ? "to" : "from", t.peer,
                                 t.window.state->buffer_name(t.window.ref.buffer), bytes);
  if (to_peer)
    ledger.track(std::move(what), std::move(*spans));
  else
    ledger.track_get(std::move(what), std::move(*spans));
}

/// The plain full-slice transfer (plain_full_slice): one record and one backend call, or the copy
/// itself where the backend's call is nothing more (Backend::cpu_copies); put_signal's data
/// travels with its signal.
[[gnu::noinline]] void transfer_plain(const Transfer& t, OpKind kind) {
  const bool to_peer = t.dir == Direction::ToPeer;
  const DomainState& d = *t.window.state;
  const int world_peer = d.members[static_cast<std::size_t>(t.peer)];
  const std::size_t bytes = static_cast<std::size_t>(t.local.shape.numel()) * dtype_size(t.local.dtype);
  if (debug_checks()) {
    debug_check_view(t.api, t.window);
    if (to_peer) check_nbi_read(t.api, t.local, zeros_like(t.local.shape), t.local.shape);
  }
  Backend& b = *d.backend;
  if (race_on()) [[unlikely]]
    race_runs(t.api, t.dir, AtomicType::None, world_peer, Run{t.window.ref.offset, t.local.data, bytes});
  if (t.signal) {
    b.record_op(kind, 0, world_peer, saturate(static_cast<Index>(bytes)), t.window.ref.domain, t.window.ref.buffer,
                t.window.ref.offset, nullptr);
    send_signal(t, world_peer, Run{t.window.ref.offset, t.local.data, bytes});
  } else {
    std::byte* heap = b.cpu_copies ? d.windows_in[static_cast<std::size_t>(t.peer)] : nullptr;
    if (heap && to_peer)  // what the backend's call would do (Backend::cpu_copies), without the call
      bulk_copy(heap + t.window.ref.offset, t.local.data, bytes);
    else if (heap)
      bulk_copy(t.local.data, heap + t.window.ref.offset, bytes);
    else if (to_peer && t.nbi)
      b.put_nbi(world_peer, t.window.ref.offset, t.local.data, bytes);
    else if (to_peer)
      b.put(world_peer, t.window.ref.offset, t.local.data, bytes);
    else if (t.nbi)
      b.get_nbi(t.local.data, world_peer, t.window.ref.offset, bytes);
    else
      b.get(t.local.data, world_peer, t.window.ref.offset, bytes);
    b.record_op(kind, 0, world_peer, saturate(static_cast<Index>(bytes)), t.window.ref.domain, t.window.ref.buffer,
                t.window.ref.offset, nullptr);
  }
  if (t.nbi) {
    NbiLedger::Spans spans;
    if (debug_checks() && bytes) spans.emplace_back(t.local.data, bytes);
    book_nbi(t, &spans, static_cast<Index>(bytes));
  }
}

/// Every other transfer, and every error: each check, then the box in runs (move_boxes).
[[gnu::noinline]] void transfer_general(const Transfer& t, OpKind kind) {
  const bool to_peer = t.dir == Direction::ToPeer;
  const DomainState& d = bound_state(t.api, t.window);
  check_peer(t.api, d, t.peer);
  if (to_peer)
    check_dtype(t.api, t.local.dtype, t.window.dtype);
  else
    check_dtype(t.api, t.window.dtype, t.local.dtype);
  check_atomic(t.api, t.atomic, t.window.dtype);
  check_chunks(t.api, t.chunk_rows, t.chunk_cols, t.pipeline);
  const Region r = region_of(t.api, to_peer ? "dst" : "src", to_peer ? "src" : "dst", t.window.shape, t.local.shape,
                             t.window_offsets, t.local_offsets, t.shape);
  const int world_peer = d.members[static_cast<std::size_t>(t.peer)];
  const Index bytes = r.shape.numel() * static_cast<Index>(dtype_size(t.window.dtype));
  if (to_peer && debug_checks()) check_nbi_read(t.api, t.local, r.local_offsets, r.shape);
  record(t.api, kind, t.atomic, d, world_peer, t.window, bytes, &r.window_offsets);
  NbiLedger::Spans spans;
  const Issue how{t.atomic, t.api, t.nbi, t.signal != nullptr, t.nbi && debug_checks() ? &spans : nullptr};
  const Run held = move_boxes(d, world_peer, t.dir, how, t.window, Box{t.window.shape, r.window_offsets, r.shape},
                              t.local.data, Box{t.local.shape, r.local_offsets, r.shape}, t.chunk_rows, t.chunk_cols);
  if (t.signal) send_signal(t, world_peer, held);
  if (t.nbi) book_nbi(t, &spans, bytes);
}

// Both paths are out of line and reached by a tail call: neither sets up a frame for the other.
void transfer(const Transfer& t) {
  const bool to_peer = t.dir == Direction::ToPeer;
  const OpKind kind = t.nbi ? (to_peer ? OpKind::PutNbi : OpKind::GetNbi) : (to_peer ? OpKind::Put : OpKind::Get);
  if (plain_full_slice(t)) return transfer_plain(t, kind);
  return transfer_general(t, kind);
}

Transfer put_transfer(const char* api, const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets,
                      const Dims* src_offsets, const Dims* shape, const PutOptions& options, bool nbi) {
  return Transfer{api,
                  Direction::ToPeer,
                  dst,
                  peer,
                  src,
                  dst_offsets,
                  src_offsets,
                  shape,
                  options.atomic,
                  options.chunk_rows,
                  options.chunk_cols,
                  options.pipeline,
                  nbi};
}

Transfer get_transfer(const char* api, const LocalDesc& dst, int peer, const WindowDesc& src, const Dims* dst_offsets,
                      const Dims* src_offsets, const Dims* shape, const GetOptions& options, bool nbi) {
  return Transfer{api,
                  Direction::FromPeer,
                  src,
                  peer,
                  dst,
                  src_offsets,
                  dst_offsets,
                  shape,
                  AtomicType::None,
                  options.chunk_rows,
                  options.chunk_cols,
                  options.pipeline,
                  nbi};
}

[[noreturn, gnu::noinline]] void throw_signal_domain(const char* api, const WindowDesc& dst, const WindowDesc& signal) {
  throw UsageError(fmt::format(
      "{}: the signal window '{}' belongs to comm domain {} but dst '{}' to comm domain {}; the signal of a "
      "put_signal is a window of dst's comm domain (peer is a rank of that domain)",
      api, signal.state->buffer_name(signal.ref.buffer), signal.state->label, dst.state->buffer_name(dst.ref.buffer),
      dst.state->label));
}

WindowDesc desc_of(const ViewRef& v) {
  return WindowDesc{v.state, *v.ref, *v.shape, v.dtype};
}

/// The checked paths' descriptor of a rank-local operand (a window operand is validated here).
LocalDesc local_desc(const char* api, const LocalRef& src) {
  return src.window ? window_local(api, desc_of(src.view))
                    : LocalDesc{src.data, *src.view.shape, src.view.dtype, *src.view.shape};
}

/// The fast paths' address of a rank-local operand: the array, or this rank's copy of the window
/// view; nullptr for a window view not bound to a comm domain (the checked path names it).
std::byte* local_address(const LocalRef& src) {
  if (!src.window) return src.data;
  const DomainState* s = src.view.state;
  return s ? s->windows_in[static_cast<std::size_t>(s->rank)] + src.view.ref->offset : nullptr;
}

/// A full-slice copy between rank `peer`'s copy of the window view `w` and the local operand
/// `local`, where it can run inline: `theirs` and `mine` are the two ends, `bytes` its size.
struct InlineCopy {
  std::byte* theirs;
  std::byte* mine;
  std::size_t bytes;
};
/// The inline paths' shared conditions: a peer whose window this process addresses where the
/// backend's put and get are copies, the same shape and dtype on both sides, a plain copy, debug
/// mode and tracing off. False, having done nothing, when any fails: the checked path then names it.
bool inline_copy(const ViewRef& w, int peer, const LocalRef& local, AtomicType atomic, Index chunk_rows,
                 Index chunk_cols, bool pipeline, InlineCopy* out) {
  const DomainState* d = w.state;
  if (!d || !d->backend->cpu_copies || debug_checks() || trace::on()) return false;
  const Dims& shape = *w.shape;
  if (peer < 0 || peer >= d->nranks() || local.view.dtype != w.dtype || !same_dims(*local.view.shape, shape) ||
      !plain_copy(atomic, chunk_rows, chunk_cols, pipeline))
    return false;
  std::byte* mine = local_address(local);
  std::byte* heap = d->windows_in[static_cast<std::size_t>(peer)];
  if (!mine || !heap) return false;
  *out = {heap + w.ref->offset, mine, static_cast<std::size_t>(shape.numel()) * dtype_size(w.dtype)};
  return true;
}

/// A full-slice put's or get's common case (the templates' PutCall / GetCall), as
/// put_signal_inline's without the signal, and with the race detector off: one copy, one record.
bool transfer_inline(Direction dir, const ViewRef& w, int peer, const LocalRef& local, AtomicType atomic,
                     Index chunk_rows, Index chunk_cols, bool pipeline, bool nbi) {
  InlineCopy x;
  if (race_on() || !inline_copy(w, peer, local, atomic, chunk_rows, chunk_cols, pipeline, &x)) return false;
  const bool to_peer = dir == Direction::ToPeer;
  bulk_copy_small(to_peer ? x.theirs : x.mine, to_peer ? x.mine : x.theirs, x.bytes);
  const OpKind kind = to_peer ? (nbi ? OpKind::PutNbi : OpKind::Put) : (nbi ? OpKind::GetNbi : OpKind::Get);
  const DomainState& d = *w.state;
  d.backend->record_op(kind, 0, d.members[static_cast<std::size_t>(peer)], saturate(static_cast<Index>(x.bytes)),
                       w.ref->domain, w.ref->buffer, w.ref->offset, nullptr);
  if (nbi) RankRuntime::get(to_peer ? "tensor::put_nbi" : "tensor::get_nbi").nbi().issued();
  return true;
}

/// put_signal_inline's signal: the cell's update and wake-up test where that is all the backend's
/// put_signal does (Backend::cpu_put_signal), the backend's notify otherwise.
inline void signal_inline(Backend& b, std::byte* heap, int target, std::uint64_t cell, std::int32_t value,
                          NotifyOp op) {
  if (b.cpu_put_signal) {
    signal_update_local(heap + cell, value, op);
    b.atomic_changed(target, cell);
  } else {
    b.notify(target, cell, value, op);
  }
}

/// put_signal_inline's copy and signal with the race detector on (out of line: the common path
/// stays as short as without it): the data's bytes are checked before the copy, the signal is a
/// release, as on the checked path.
[[gnu::noinline]] void put_signal_raced(const PutSignalCall& c, std::byte* heap, int target, std::byte* src,
                                        std::size_t bytes, std::uint64_t cell) {
  const char* api = c.nbi ? "tensor::put_signal_nbi" : "tensor::put_signal";
  race_runs(api, Direction::ToPeer, AtomicType::None, target, Run{c.dst.ref->offset, src, bytes});
  bulk_copy_small(heap + c.dst.ref->offset, src, bytes);
  const RaceRelease release(target, cell, c.op == NotifyOp::Set);
  signal_inline(*c.dst.state->backend, heap, target, cell, c.value, c.op);
}

/// put_signal's common case, to a peer whose window this process addresses where the backend's
/// put to it is a copy (Backend::cpu_copies): a full slice of the same shape and dtype, a plain
/// copy (inline_copy), a valid signal cell of dst's comm domain, debug mode and tracing off.
/// Every check runs once, on the views' parts; then the copy, the signal — the cell's update and wake-up test
/// where that is all the backend's put_signal does (Backend::cpu_put_signal: shm), the backend's
/// notify otherwise (mpi: it also releases what went to other nodes) — and one PutSignal record.
/// With the race detector on, put_signal_raced does the copy and the signal. Returns false,
/// having done nothing, when any condition fails: the checked path then names the failure.
bool put_signal_inline(const PutSignalCall& c) {
  const DomainState* d = c.dst.state;
  const PutOptions& o = *c.options;
  std::uint64_t cell = 0;
  InlineCopy x;
  if (c.signal.state != d || c.shape || !notify_op_valid(c.op) || c.signal.dtype != DType::INT32 ||
      !inline_copy(c.dst, c.peer, c.src, o.atomic, o.chunk_rows, o.chunk_cols, o.pipeline, &x) ||
      !cell_fast(*c.signal.shape, c.signal.ref->offset, *c.signal_offsets, &cell))
    return false;
  Backend& b = *d->backend;
  std::byte* heap = d->windows_in[static_cast<std::size_t>(c.peer)];
  const int target = d->members[static_cast<std::size_t>(c.peer)];
  const std::size_t bytes = x.bytes;
  if (race_on()) [[unlikely]] {
    put_signal_raced(c, heap, target, x.mine, bytes, cell);
  } else {
    bulk_copy_small(x.theirs, x.mine, bytes);
    signal_inline(b, heap, target, cell, c.value, c.op);
  }
  // Recorded after the signal, as an atomic's record is: outside debug mode nothing reads the
  // history before the rank's call ends or a deadline passes (op_history.h).
  const std::uint64_t put = c.dst.ref->buffer | static_cast<std::uint64_t>(saturate(static_cast<Index>(bytes))) << 32;
  b.record_put_signal(c.nbi ? OpKind::PutSignalNbi : OpKind::PutSignal, static_cast<std::uint8_t>(c.op), target,
                      c.value, c.signal.ref->domain, c.signal.ref->buffer, cell, c.signal_offsets, put);
  if (c.nbi) RankRuntime::get("tensor::put_signal_nbi").nbi().issued();
  return true;
}

/// Every other put_signal of the templates, and every error: the descriptors, then the checked path.
[[gnu::noinline]] void put_signal_checked(const PutSignalCall& c) {
  const char* api = c.nbi ? "tensor::put_signal_nbi" : "tensor::put_signal";
  const LocalDesc src = local_desc(api, c.src);
  const WindowDesc signal = desc_of(c.signal);
  put_signal(desc_of(c.dst), c.peer, src, c.dst_offsets, c.src_offsets, c.shape,
             SignalArg{signal, *c.signal_offsets, c.value, c.op}, *c.options, c.nbi);
}

}  // namespace

void put(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
         const Dims* shape, const PutOptions& options) {
  transfer(put_transfer("tensor::put", dst, peer, src, dst_offsets, src_offsets, shape, options, false));
}

void get(const LocalDesc& dst, int peer, const WindowDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
         const Dims* shape, const GetOptions& options) {
  transfer(get_transfer("tensor::get", dst, peer, src, dst_offsets, src_offsets, shape, options, false));
}

void put_nbi(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
             const Dims* shape, const PutOptions& options) {
  transfer(put_transfer("tensor::put_nbi", dst, peer, src, dst_offsets, src_offsets, shape, options, true));
}

void get_nbi(const LocalDesc& dst, int peer, const WindowDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
             const Dims* shape, const GetOptions& options) {
  transfer(get_transfer("tensor::get_nbi", dst, peer, src, dst_offsets, src_offsets, shape, options, true));
}

void put(const PutCall& c) {
  const PutOptions& o = *c.options;
  if (transfer_inline(Direction::ToPeer, c.dst, c.peer, c.src, o.atomic, o.chunk_rows, o.chunk_cols, o.pipeline, c.nbi))
      [[likely]]
    return;
  const char* api = c.nbi ? "tensor::put_nbi" : "tensor::put";
  const LocalDesc src = local_desc(api, c.src);
  transfer(put_transfer(api, desc_of(c.dst), c.peer, src, nullptr, nullptr, nullptr, *c.options, c.nbi));
}

void get(const GetCall& c) {
  const GetOptions& o = *c.options;
  if (transfer_inline(Direction::FromPeer, c.src, c.peer, c.dst, AtomicType::None, o.chunk_rows, o.chunk_cols,
                      o.pipeline, c.nbi)) [[likely]]
    return;
  const char* api = c.nbi ? "tensor::get_nbi" : "tensor::get";
  const LocalDesc dst = local_desc(api, c.dst);
  transfer(get_transfer(api, dst, c.peer, desc_of(c.src), nullptr, nullptr, nullptr, *c.options, c.nbi));
}

void put_signal(const PutSignalCall& c) {
  if (put_signal_inline(c)) [[likely]]
    return;
  return put_signal_checked(c);
}

void put_signal(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
                const Dims* shape, const SignalArg& signal, const PutOptions& options, bool nbi) {
  const char* api = nbi ? "tensor::put_signal_nbi" : "tensor::put_signal";
  // The signal is checked before any data moves, so a bad signal leaves the peer's window as it was.
  const SignalCell cell = notify_cell(api, signal.window, peer, signal.offsets, signal.op);
  if (dst.state && signal.window.state != dst.state) [[unlikely]]
    throw_signal_domain(api, dst, signal.window);
  Transfer t = put_transfer(api, dst, peer, src, dst_offsets, src_offsets, shape, options, nbi);
  t.signal = &signal;
  t.cell = &cell;
  transfer(t);
}

void quiet() {
  RankRuntime& rt = RankRuntime::get("system::quiet");
  rt.nbi().complete(rt.backend_process(), "system::quiet");
}

void fence() {
  RankRuntime::get("system::fence").backend_process().fence();
}

}  // namespace pld::detail
