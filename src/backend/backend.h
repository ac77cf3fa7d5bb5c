// The backend interface: the few operations that differ between carrying windows in shared
// memory on one machine (shm/) and in MPI-3 RMA windows across machines (mpi/).
// Everything above it (kernel API validation, collectives, worker) is backend-independent.
//
// Offsets are byte offsets into a rank's window heap (the symmetric heap that every comm
// domain's windows are carved from); ranks are world ranks. A comm domain reaches its windows
// through a Backend (DomainState::backend): shm has one for all domains, mpi one per domain
// (an MPI window on the domain's communicator). The rank runtime needs only the process-wide
// part, BackendProcess: one per rank process, whatever the number of comm domains (the shm
// backend is one object for both; under mpi, MpiBackend is the process part and each domain's
// MpiWindow a Backend).
#pragma once

#include "backend/op_history.h"

#include <pld/detail/atomic.hpp>
#include <pld/types.hpp>

#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// A check a collective's wait runs while it sleeps (every slice, from the first sleep on): true
/// ends the wait with WaitStatus::Mismatch. The collectives' match check (coll/match.h) uses it
/// to see a peer that is in another collective.
struct WaitProbe {
  bool (*check)(void* context) = nullptr;
  void* context = nullptr;
  bool operator()() const { return check(context); }
};

/// What a wait is waiting on, for the deadline report (published while the wait sleeps).
struct WaitSite {
  std::uint32_t domain = 0;
  std::uint32_t buffer = 0;
  const Dims* offsets = nullptr;
  int writer = -1;             // world rank the protocol says writes the cell (collectives), or -1
  const char* what = nullptr;  // the collective waiting ("allreduce"), or nullptr for a kernel wait
  // A multi-cell wait: the signal view's shape and the heap offset of its element 0.
  const Dims* shape = nullptr;
  std::uint64_t base = 0;
  const WaitProbe* probe = nullptr;  // checked while the wait sleeps, or nullptr
};

// ---- signals: waits on several cells (wait_until_any / all / some) ----

/// Which cells a multi-cell wait needs: Any and Some end once one cell is satisfied, All once
/// every cell has been (each cell counts from the moment a poll sees it satisfied).
enum class WaitMode : std::int32_t { One = 0, Any = 1, All = 2, Some = 3 };

/// One cell of a multi-cell wait. In: its byte offset in the calling rank's heap and the value
/// it is compared with. Out: the last value read, and whether a poll saw it satisfied.
struct WaitCell {
  std::uint64_t offset = 0;
  std::int32_t expected = 0;
  std::int32_t value = 0;
  bool done = false;
};

/// Cells of one multi-cell wait that a report names (the rest are counted).
inline constexpr int kWaitReportCells = 64;

/// A multi-cell wait as published for the deadline report (shm control block, mpi wait record):
/// the signal view's shape and first element, and the first kWaitReportCells cells.
struct WaitCellsRecord {
  std::int32_t count = 0;  // cells awaited; 0: a single-cell wait
  WaitMode mode = WaitMode::One;
  std::int32_t ndim = 0;
  std::int64_t shape[kMaxDims] = {};
  std::uint64_t base = 0;  // heap offset of the view's element 0
  std::uint64_t offset[kWaitReportCells] = {};
  std::int32_t expected[kWaitReportCells] = {};
  std::int32_t value[kWaitReportCells] = {};  // at the end of the wait (mpi; the shm host reads live)
};

/// The report record of a multi-cell wait of `n` cells on `site`'s view.
inline void fill_cells_record(WaitCellsRecord& r, const WaitSite& site, const WaitCell* cells, std::size_t n,
                              WaitMode mode) {
  r.count = static_cast<std::int32_t>(n);
  r.mode = mode;
  r.ndim = site.shape ? site.shape->size() : 0;
  for (int d = 0; d < r.ndim; ++d) r.shape[d] = (*site.shape)[d];
  r.base = site.base;
  for (std::size_t i = 0; i < n && i < static_cast<std::size_t>(kWaitReportCells); ++i) {
    r.offset[i] = cells[i].offset;
    r.expected[i] = cells[i].expected;
    r.value[i] = cells[i].value;
  }
}

struct DebugShared;  // debug/checks.h: shared state of the debug-mode checks

/// Seconds between two "still waiting" notes of one wait (after the first, at PLD_WAIT_NOTE).
inline constexpr double kWaitNoteEvery = 30;

/// How a wait ended: satisfied, at the deadline, released by the abort flag, or by its probe.
enum class WaitStatus { Ok, Timeout, Aborted, Mismatch };

/// The process-wide part of a backend: what a poll loop outside Backend::wait needs.
class BackendProcess {
 public:
  virtual ~BackendProcess() = default;
  /// Drives communication progress once (a poll loop outside wait(), e.g. deferred task
  /// conditions, calls it each round). shm: nothing to do.
  virtual void progress() {}
  /// Makes RMA updates of this rank's windows visible to its loads after a poll loop saw a cell
  /// change (shm: the acquire load already did).
  virtual void acquire() {}
  /// The job is aborting (a rank failed), for poll loops outside wait().
  virtual bool aborting() const { return false; }

  // --- Completion of non-blocking transfers (system::quiet / system::fence), process-wide. ---
  /// Every put, get and atomic add of this process (non-blocking ones included) is complete: a
  /// put's data is at its target and its source no longer read, a get's data is in its
  /// destination. shm: a fence (copies complete when they return).
  virtual void quiet() {}
  /// Puts issued before the fence reach each target before puts issued after it to the same
  /// target. shm: a fence.
  virtual void fence() {}
};

/// Collectives that the backend's engine runs itself on a comm domain (mpi: MPI_Ibarrier, MPI_Ialltoall & co.
/// on the domain's communicator), for domains whose peers pld cannot reach as memory. Each call is
/// collective over the domain's members and runs to completion; `site` names the collective and
/// its signal (which the engine does not touch). Before the call this rank's earlier puts are
/// complete at their targets; after it the result is in this rank's own window memory and every
/// member's writes before the call are visible (as after a barrier). Pointers are this rank's own
/// memory: its copy of a window buffer, or rank-local data. Returns Ok, or Timeout / Aborted
/// as Backend::wait does (the collective is then abandoned on this rank).
class NativeCollectives {
 public:
  virtual WaitStatus barrier(const WaitSite& site) = 0;
  /// In place: `count` elements at `data` become op over every member's.
  virtual WaitStatus allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) = 0;
  /// `bytes` at `data` of member `root` (domain-local), on every member.
  virtual WaitStatus broadcast(void* data, std::size_t bytes, int root, const WaitSite& site) = 0;
  /// Row s of `target` ([P, row_bytes]) becomes member s's `local`.
  virtual WaitStatus allgather(const void* local, void* target, std::size_t row_bytes, const WaitSite& site) = 0;
  /// `target` is [P, count] on every member; row `me` becomes op over every member's row `me`,
  /// the other rows stay as they are.
  virtual WaitStatus reduce_scatter(void* target, std::size_t count, DType dtype, ReduceOp op,
                                    const WaitSite& site) = 0;
  /// Row s of `target` becomes row `me` of member s's `input` (both [P, row_bytes]).
  virtual WaitStatus all_to_all(const void* input, void* target, std::size_t row_bytes, const WaitSite& site) = 0;
  /// Blocks of `rows` rows of `row_bytes`: member s's send_counts[me] first rows of its block
  /// `me` land in block s of `target`, send_counts[me] in recv_counts[s]; rows past a count stay.
  virtual WaitStatus all_to_all_v(const void* input, void* target, std::size_t rows, std::size_t row_bytes,
                                  const std::int32_t* send_counts, std::int32_t* recv_counts, const WaitSite& site) = 0;

 protected:
  ~NativeCollectives() = default;
};

class Backend : public BackendProcess {
 public:
  virtual const char* name() const = 0;
  virtual int world_size() const = 0;
  virtual std::uint64_t heap_bytes() const = 0;

  /// Local address through which this process reaches `rank`'s heap, or nullptr when heaps are
  /// not load/store addressable. The calling rank's own heap is always addressable.
  virtual std::byte* heap_base(int rank) const = 0;

  virtual void put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) = 0;
  virtual void get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) = 0;
  /// Element-wise atomic `heap[offset..] += src[0..count)` for fp32/fp16/bf16/int32/int16/int8.
  virtual void atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) = 0;

  // --- Put-with-signal and non-blocking transfers (tensor::put_signal, put_nbi, get_nbi). ---
  /// A put that may return before it completes: `src` is read until the next quiet (or a notify,
  /// which is a release of it too). Default: the blocking put.
  virtual void put_nbi(int rank, std::uint64_t offset, const void* src, std::size_t bytes) {
    put(rank, offset, src, bytes);
  }
  /// A get that may return before `dst` holds the data; complete at the next quiet.
  virtual void get_nbi(void* dst, int rank, std::uint64_t offset, std::size_t bytes) { get(dst, rank, offset, bytes); }
  /// A put of `bytes` at `offset` followed by notify(rank, signal_offset, value, op), ordered: a
  /// rank that sees the signal sees the data. `nbi`: `src` may be read until the next quiet.
  /// Default: put (or put_nbi) then notify.
  virtual void put_signal(int rank, std::uint64_t offset, const void* src, std::size_t bytes,
                          std::uint64_t signal_offset, std::int32_t value, NotifyOp op, bool nbi) {
    if (nbi)
      put_nbi(rank, offset, src, bytes);
    else
      put(rank, offset, src, bytes);
    notify(rank, signal_offset, value, op);
  }

  /// Release, then Set or AtomicAdd the int32 cell at `offset` of `rank`'s heap; wakes a sleeper.
  virtual void notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) = 0;
  /// The doorbell of a message written straight into `rank`'s heap (the collectives' LL
  /// exchange, coll/ll.cc), whose last int32, at `offset`, already holds `value` from a release
  /// store: what notify(Set value) does (the default), where a backend can skip notify's general
  /// checks.
  virtual void ring(int rank, std::uint64_t offset, std::int32_t value) { notify(rank, offset, value, NotifyOp::Set); }
  /// Blocks until the calling rank's cell at `offset` satisfies `cmp expected`, then acquires.
  /// Returns Timeout at the deadline and Aborted when the job is being aborted; `seen` receives
  /// the last value read.
  virtual WaitStatus wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                          std::int32_t* seen) = 0;

  // --- Atomics (pld::system::atomic_*) -------------------------------------------------------
  /// Applies `op` to the cell of `dtype` (int32, int64, uint32 or uint64, naturally aligned) at
  /// `offset` of `rank`'s heap, atomically with respect to every other atomic and notify on it,
  /// and returns its old value zero-extended. A full barrier: release as notify (earlier puts of
  /// this rank are complete first) and acquire as wait. Complete at the target on return; a
  /// change of a 4-byte cell wakes a sleeper as notify does.
  virtual std::uint64_t atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                               std::uint64_t compare) = 0;
  /// Whether atomic() is nothing but the CPU read-modify-write on the cell as this process
  /// addresses it (DomainState::windows_in, backend/amo.h atomic_local) followed by
  /// atomic_changed() for a 4-byte cell it may have changed: the kernel API then applies it
  /// itself, without the call. shm: true.
  bool cpu_atomics = false;
  /// Whether put, get, put_nbi and get_nbi to or from a member whose heap this process addresses
  /// (DomainState::windows_in) are nothing but bulk_copy (core/copy.h) there, complete on return:
  /// the kernel API then copies itself, without the call. shm and mpi (on-node members): true.
  bool cpu_copies = false;
  /// Whether put_signal() is nothing but bulk_copy (core/copy.h) into the peer's window as this
  /// process addresses it (DomainState::windows_in), then notify's update of the signal cell there
  /// (signal_update_local: a release store for Set, fetch_add for AtomicAdd), then
  /// atomic_changed(): the kernel API then does it itself, without the call. Only with
  /// cpu_copies. shm: true.
  bool cpu_put_signal = false;
  /// After a CPU atomic (cpu_atomics) that may have changed the int32 cell at `offset` of
  /// `rank`'s heap: wakes its sleepers, as notify does.
  virtual void atomic_changed(int /*rank*/, std::uint64_t /*offset*/) {}

  // ---- signals: waits on several cells (wait_until_any / all / some) ----
  /// Blocks until the calling rank's cells satisfy `cmp` as `mode` asks (Any / Some: one of them;
  /// All: each of them at some poll), then acquires. Every poll reads every cell not yet done,
  /// so on return `done` marks every cell seen satisfied and `value` holds the last value read.
  /// Deadline, abort and report as for wait (the report names every cell).
  virtual WaitStatus wait_cells(WaitCell* cells, std::size_t n, WaitCmp cmp, WaitMode mode, const WaitSite& site) = 0;

  /// The engine's own collectives for calls on signal buffer `signal_buffer` of this domain, or
  /// nullptr (shm, or where the engine's are not the better choice): pld's schedules run then.
  /// `direct`: every member's window is load/store addressable here (pld's direct schedules
  /// apply). Every member of the domain gets the same answer.
  virtual NativeCollectives* native_collectives(std::uint32_t /*signal_buffer*/, bool /*direct*/) { return nullptr; }
  /// Whether native_collectives() may return anything: false spares every collective the call.
  bool offers_native = false;

  /// Diagnostics (src/debug), set in the rank process: this rank's operation history (read by
  /// the host's hang report) and, in debug mode (PLD_DEBUG), the shared state of the cross-rank
  /// checks (nullptr otherwise).
  OpRing* op_history = nullptr;
  OpRing* op_histories = nullptr;  // every rank's ring, by world rank
  DebugShared* debug_shared = nullptr;

  /// Appends one record to this rank's operation history (backend/op_history.h).
  void record_op(OpKind kind, std::uint8_t flag, int peer, std::int32_t value, std::uint32_t domain,
                 std::uint32_t buffer, std::uint64_t offset, const Dims* coords) noexcept {
    if (op_history) op_history->write(kind, flag, peer, value, domain, buffer, offset, coords);
  }
  /// Appends put_signal's one record (OpKind::PutSignal or PutSignalNbi; `put` as OpRing::write_put_signal).
  void record_put_signal(OpKind kind, std::uint8_t flag, int peer, std::int32_t value, std::uint32_t domain,
                         std::uint32_t buffer, std::uint64_t offset, const Dims* coords, std::uint64_t put) noexcept {
    if (op_history) op_history->write_put_signal(kind, flag, peer, value, domain, buffer, offset, coords, put);
  }
};

}  // namespace pld::detail
