// Per-rank operation history: the last kOpHistory kernel operations of every rank (notify, wait,
// put, get, remote_load, remote_store, collective entries), kept in a ring that the backend owns
// in memory the host can read (the shm control block; the mpi backend's process state), so that a
// hang report (debug/hang.h) can say what every rank did last and who has written the cell a rank
// waits on. Backend::record_op appends to it.
//
// put_signal's common case (a full slice, outside debug mode and tracing) writes one PutSignal
// record that describes both halves: the signal's fields as a notify has them, and the data's
// window buffer and byte count; every other put_signal records a Put and a Notify.
//
// Cost: one record is seven relaxed 64-bit stores (eight for PutSignal) and one relaxed load into
// the rank's own ring: plain `mov`s on x86 to two cache lines (the record's slot and the head), no
// read-modify-write, no fence, no syscall. Threads of one rank (core_num lanes, a task scheduler)
// share the ring without locking: two records written at the same moment may land in one slot,
// and the reader skips a slot whose sequence number does not match. The history is diagnostic,
// never a synchronisation.
#pragma once

#include <pld/types.hpp>

#include <atomic>
#include <climits>
#include <cstdint>

namespace pld::detail {

/// Records kept per rank (the "last N operations" of a hang report).
inline constexpr int kOpHistory = 16;
static_assert(kMaxDims >= 3, "a record reads the first three entries of every Dims");

enum class OpKind : std::uint8_t {
  None = 0,
  Notify,
  Wait,
  Put,
  Get,
  RemoteLoad,
  RemoteStore,
  Collective,
  // signals: a wait on several cells (wait_until_any / all / some)
  WaitCells,
  // Non-blocking transfers (tensor::put_nbi / get_nbi).
  PutNbi,
  GetNbi,
  // Atomics (pld::system::atomic_*): flag is the AmoOp, value the operand (truncated to 32 bits).
  Atomic,
  // put_signal / put_signal_nbi as one record: the signal's fields as Notify has them (flag,
  // peer, value, domain, buffer, offset, coords) and the data's buffer and bytes (put_buffer,
  // put_bytes).
  PutSignal,
  PutSignalNbi,
};

/// Whether a record changes a signal cell as a notify does (Notify, and put_signal's one record).
inline bool notifies(OpKind k) {
  return k == OpKind::Notify || k == OpKind::PutSignal || k == OpKind::PutSignalNbi;
}

/// The collectives, as recorded (OpRecord::flag of a Collective record, debug-mode descriptors).
enum class CollKind : std::uint8_t {
  None = 0,
  Barrier,
  Allreduce,
  Broadcast,
  Allgather,
  ReduceScatter,
  AllToAll,
  AllToAllV
};

inline const char* coll_name(CollKind k) {
  switch (k) {
    case CollKind::Barrier: return "barrier";
    case CollKind::Allreduce: return "allreduce";
    case CollKind::Broadcast: return "broadcast";
    case CollKind::Allgather: return "allgather";
    case CollKind::ReduceScatter: return "reduce_scatter";
    case CollKind::AllToAll: return "all_to_all";
    case CollKind::AllToAllV: return "all_to_all_v";
    default: return "collective";
  }
}

/// Saturates a byte count into an OpRecord value.
inline std::int32_t saturate(Index v) {
  return v > INT32_MAX ? INT32_MAX : static_cast<std::int32_t>(v);
}

/// One operation, decoded. `offset` is the byte offset (in the target rank's window heap) of the
/// signal cell (notify, wait), or of the window buffer (data movement, collectives); `coords` are
/// up to three leading offsets as the kernel passed them (the box start for data movement).
struct OpRecord {
  std::uint64_t seq = 0;  // 1-based position in the rank's history; 0 = empty
  OpKind kind = OpKind::None;
  // Notify: NotifyOp; Wait: WaitCmp; WaitCells: WaitCmp | WaitMode << 4; RemoteStore/Put: AtomicType;
  // Collective: CollKind; Atomic: AmoOp
  std::uint8_t flag = 0;
  // World rank of the target (Notify/Put/RemoteStore/Atomic) or source (Get/RemoteLoad); WaitCells:
  // the number of cells (saturated)
  std::int16_t peer = -1;
  std::int32_t value = 0;  // Notify: value; Wait: expected; data movement: bytes (saturated); Atomic: operand
  std::uint32_t domain = 0, buffer = 0;
  std::uint64_t offset = 0;
  std::int32_t coords[3] = {0, 0, 0};
  std::uint8_t ndim = 0;
  std::uint32_t put_buffer = 0;  // PutSignal(Nbi): the data's window buffer
  std::int32_t put_bytes = 0;    // PutSignal(Nbi): the data's bytes (saturated)
};

/// The ring of one rank, as stored in shared memory (packed into words written with relaxed
/// atomic stores).
struct alignas(64) OpRing {
  std::atomic<std::uint64_t> head{0};  // records written so far
  struct alignas(64) Slot {            // one cache line: a record's stores touch one line besides the head's
    std::atomic<std::uint64_t> w[7];
  } slots[kOpHistory];

  /// Appends a record.
  void write(OpKind kind, std::uint8_t flag, int peer, std::int32_t value, std::uint32_t domain, std::uint32_t buffer,
             std::uint64_t offset, const Dims* coords) noexcept {
    const std::uint64_t n = head.load(std::memory_order_relaxed);
    publish(fill(n, kind, flag, peer, value, domain, buffer, offset, coords), n);
  }
  /// Appends a PutSignal(Nbi) record: `put` is its put_buffer | put_bytes << 32.
  void write_put_signal(OpKind kind, std::uint8_t flag, int peer, std::int32_t value, std::uint32_t domain,
                        std::uint32_t buffer, std::uint64_t offset, const Dims* coords, std::uint64_t put) noexcept {
    const std::uint64_t n = head.load(std::memory_order_relaxed);
    Slot& s = fill(n, kind, flag, peer, value, domain, buffer, offset, coords);
    s.w[6].store(put, std::memory_order_relaxed);
    publish(s, n);
  }

  /// Forgets every record (a process that is a rank for many calls: mpi backend).
  void clear() noexcept {
    for (Slot& s : slots) s.w[0].store(0, std::memory_order_relaxed);
    head.store(0, std::memory_order_release);
  }
  /// Copies the ring's records, oldest first, into out[0..return).
  int read(OpRecord* out) const noexcept {
    const std::uint64_t h = head.load(std::memory_order_acquire);
    const std::uint64_t first = h > kOpHistory ? h - kOpHistory : 0;
    int n = 0;
    for (std::uint64_t i = first; i < h; ++i) {
      const Slot& s = slots[i % kOpHistory];
      OpRecord r;
      r.seq = s.w[0].load(std::memory_order_acquire);
      if (r.seq != i + 1) continue;  // overwritten or torn
      const std::uint64_t w1 = s.w[1].load(std::memory_order_relaxed), w2 = s.w[2].load(std::memory_order_relaxed);
      r.kind = static_cast<OpKind>(w1 & 0xff);
      r.flag = static_cast<std::uint8_t>((w1 >> 8) & 0xff);
      r.peer = static_cast<std::int16_t>((w1 >> 16) & 0xffff);
      r.value = static_cast<std::int32_t>(static_cast<std::uint32_t>(w1 >> 32));
      r.domain = static_cast<std::uint32_t>(w2);
      r.buffer = static_cast<std::uint32_t>(w2 >> 32);
      r.offset = s.w[3].load(std::memory_order_relaxed);
      const std::uint64_t c01 = s.w[4].load(std::memory_order_relaxed), c2 = s.w[5].load(std::memory_order_relaxed);
      r.coords[0] = static_cast<std::int32_t>(static_cast<std::uint32_t>(c01));
      r.coords[1] = static_cast<std::int32_t>(static_cast<std::uint32_t>(c01 >> 32));
      r.coords[2] = static_cast<std::int32_t>(static_cast<std::uint32_t>(c2));
      r.ndim = static_cast<std::uint8_t>(c2 >> 32);
      if (r.kind == OpKind::PutSignal || r.kind == OpKind::PutSignalNbi) {
        const std::uint64_t put = s.w[6].load(std::memory_order_relaxed);
        r.put_buffer = static_cast<std::uint32_t>(put);
        r.put_bytes = static_cast<std::int32_t>(static_cast<std::uint32_t>(put >> 32));
      }
      if (s.w[0].load(std::memory_order_acquire) != r.seq) continue;
      out[n++] = r;
    }
    return n;
  }

 private:
  /// Writes record n + 1's fields (w[6] only for PutSignal: read only for those).
  Slot& fill(std::uint64_t n, OpKind kind, std::uint8_t flag, int peer, std::int32_t value, std::uint32_t domain,
             std::uint32_t buffer, std::uint64_t offset, const Dims* coords) noexcept {
    Slot& s = slots[n % kOpHistory];
    std::uint64_t c01 = 0, c2 = 0;
    if (coords) {  // the first three entries, whatever the size: a reader takes the first ndim of them
      const Dims& x = *coords;
      c01 = static_cast<std::uint32_t>(x[0]) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(x[1])) << 32);
      c2 = static_cast<std::uint32_t>(x[2]) | (static_cast<std::uint64_t>(x.size()) << 32);
    }
    s.w[0].store(0, std::memory_order_relaxed);
    s.w[1].store(static_cast<std::uint64_t>(kind) | (static_cast<std::uint64_t>(flag) << 8) |
                     (static_cast<std::uint64_t>(static_cast<std::uint16_t>(peer)) << 16) |
                     (static_cast<std::uint64_t>(static_cast<std::uint32_t>(value)) << 32),
                 std::memory_order_relaxed);
    s.w[2].store(domain | (static_cast<std::uint64_t>(buffer) << 32), std::memory_order_relaxed);
    s.w[3].store(offset, std::memory_order_relaxed);
    s.w[4].store(c01, std::memory_order_relaxed);
    s.w[5].store(c2, std::memory_order_relaxed);
    return s;
  }
  void publish(Slot& s, std::uint64_t n) noexcept {
    s.w[0].store(n + 1, std::memory_order_release);
    head.store(n + 1, std::memory_order_release);
  }
};

}  // namespace pld::detail
