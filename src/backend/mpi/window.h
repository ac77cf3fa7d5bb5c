// mpi backend: one comm domain's window. Each comm domain has its own MPI-3 RMA window on the
// domain's communicator (MPI_Win_allocate, passive target, locked once), holding the data and the
// signals of that domain at the same heap offsets as on shm. Members on this process's node share
// the window's memory (MPI_Win_allocate_shared): heap_base(peer) is their address, put/get are
// copies and notify is a CPU atomic, as on shm. Members on other nodes are reached through
// MPI_Put / MPI_Get / MPI_Accumulate, or two-sided messages (heap_base(peer) is nullptr). A domain
// all on one node thus runs the collectives' direct schedules; one spanning nodes their RMA path
// or the engine's collectives. docs/design/mpi-backend.md explains every choice with the
// measurements behind it.
#pragma once

#include "backend/backend.h"
#include "backend/mpi/exchange.h"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace pld::detail {

class MpiBackend;

/// When an engine collective gives up (the wait deadline, PLD_WAIT_TIMEOUT).
using NativeDeadline = std::chrono::steady_clock::time_point;

/// The calling thread's scratch of at least `bytes` for engine collectives, reused from call to
/// call (a fresh block would cost a zero-fill or page faults every call); abandon_native_scratch()
/// leaves it to a collective still pending in MPI (collectives.cc).
std::byte* native_scratch(std::size_t bytes);
void abandon_native_scratch();
struct MessageHeader;                    // messages.cc
enum class MessageKind : std::uint32_t;  // messages.cc

/// The wait a rank was in when the call's first wait deadline or abort ended it, for the
/// wait-for report at a deadline (the shm host reads every rank's live wait from its control
/// block instead; under mpi each process keeps its own and the report gathers them).
struct MpiWaitRecord {
  bool valid = false;
  std::uint32_t domain = 0, buffer = 0;
  Dims offsets;
  WaitCmp cmp = WaitCmp::Ge;
  std::int32_t expected = 0, value = 0;
  std::uint64_t offset = 0;
  int writer = -1;
  char what[32] = {};     // the collective waiting, or empty
  WaitCellsRecord cells;  // a multi-cell wait (count 0: a single-cell wait)
};

/// One comm domain's window: the heap offsets [lo, lo + bytes) of every member, where the
/// domain's buffers lie. Ranks in calls are world ranks; the window translates them to ranks of
/// the domain's communicator.
class MpiWindow final : public Backend, public NativeCollectives {
 public:
  MpiWindow(const MpiWindow&) = delete;
  MpiWindow& operator=(const MpiWindow&) = delete;

  const char* name() const override { return "mpi"; }
  int world_size() const override;
  std::uint64_t heap_bytes() const override { return lo_ + bytes_; }
  /// Where heap offsets [lo, lo + bytes) of `rank` lie here: mine and on-node members'; else nullptr.
  std::byte* heap_base(int rank) const override;

  void put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) override;
  void get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) override;
  void atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) override;
  void notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) override;
  void ring(int rank, std::uint64_t offset, std::int32_t value) override;  // signal.cc
  // Put-with-signal and non-blocking transfers (rma.cc). Members sharing this node: copies, as on
  // shm. RMA: MPI_Put / MPI_Get without a flush, completed by the next notify, fence or quiet;
  // put_signal = MPI_Put + the notify's flush and accumulate (no local flush of its own).
  // Messages: the put and its signal are one message; a payload sent on its own is not waited
  // for, nor is a non-blocking get's reply: quiet waits for both.
  void put_nbi(int rank, std::uint64_t offset, const void* src, std::size_t bytes) override;
  void get_nbi(void* dst, int rank, std::uint64_t offset, std::size_t bytes) override;
  void put_signal(int rank, std::uint64_t offset, const void* src, std::size_t bytes, std::uint64_t signal_offset,
                  std::int32_t value, NotifyOp op, bool nbi) override;
  void quiet() override;
  void fence() override;
  WaitStatus wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                  std::int32_t* seen) override;
  std::uint64_t atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                       std::uint64_t compare) override;
  WaitStatus wait_cells(WaitCell* cells, std::size_t n, WaitCmp cmp, WaitMode mode, const WaitSite& site) override;
  void progress() override;
  void acquire() override;
  bool aborting() const override;
  NativeCollectives* native_collectives(std::uint32_t signal_buffer, bool direct) override;

  // The engine's collectives on the domain's communicator (collectives.cc).
  WaitStatus barrier(const WaitSite& site) override;
  WaitStatus allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) override;
  WaitStatus broadcast(void* data, std::size_t bytes, int root, const WaitSite& site) override;
  WaitStatus allgather(const void* local, void* target, std::size_t row_bytes, const WaitSite& site) override;
  WaitStatus reduce_scatter(void* target, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site) override;
  WaitStatus all_to_all(const void* input, void* target, std::size_t row_bytes, const WaitSite& site) override;
  WaitStatus all_to_all_v(const void* input, void* target, std::size_t rows, std::size_t row_bytes,
                          const std::int32_t* send_counts, std::int32_t* recv_counts, const WaitSite& site) override;

  std::uint64_t lo() const { return lo_; }
  std::uint64_t bytes() const { return bytes_; }
  /// Every member shares this process's node and memory: no operation of the window needs MPI.
  bool all_shared() const { return all_shared_; }

 private:
  friend class MpiBackend;
  struct MessageHeader;                    // messages.cc
  enum class MessageKind : std::uint32_t;  // messages.cc
  MpiWindow(MpiBackend& engine, MPI_Comm comm, const std::vector<int>& members);
  /// Rank of world rank `rank` in the window's group (throws for a non-member or an offset
  /// outside the window: a bug). Inline, as local_at: every put, get, notify and wait starts here.
  int target(int rank, std::uint64_t offset, std::size_t bytes) const;
  [[noreturn]] void outside(int rank, std::uint64_t offset, std::size_t bytes) const;
  void mark_dirty(int target);
  /// The poll loop of wait and wait_cells (signal.cc).
  template <class Ready, class Record, class Awaited>
  WaitStatus poll_until(Ready&& ready, Record&& record, const WaitSite& site, Awaited&& awaited);
  /// Local address of heap offset `offset` of `rank` if this process reaches it as memory (its
  /// own window, or a member sharing this node), else nullptr.
  std::byte* local_at(int rank, std::uint64_t offset) const;
  /// MPI_Put / MPI_Get of `bytes` with target rank `t` of the window, in pieces; no flush. Under the MPI mutex.
  void rma_put(int t, std::uint64_t offset, const void* src, std::size_t bytes);
  void rma_get(void* dst, int t, std::uint64_t offset, std::size_t bytes);
  void fp16_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype);
  /// Takes / gives back the per-target lock of the control window (rma.cc); `what` names the
  /// operation in the error when the job aborts meanwhile. unlock_target runs under the MPI mutex.
  void lock_target(int rank, const char* what);
  void unlock_target(int rank);
  /// An atomic of the RMA path: MPI_Fetch_and_op / MPI_Compare_and_swap on 4-byte cells, the
  /// target lock around get-modify-put on 8-byte ones (atomic.cc).
  std::uint64_t rma_atomic(int rank, int t, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                           std::uint64_t compare);
  /// Local address of heap offset `offset` of `rank`'s window if it shares this node's memory.
  std::byte* shared_at(int rank, std::uint64_t offset) const {
    std::byte* base = shared_[static_cast<std::size_t>(rank)];
    return base ? base + (offset - lo_) : nullptr;
  }
  /// Whether any member's heap is not load/store addressable from this process.
  bool has_remote_peers() const;
  /// The communicators of the engine's collectives, one per signal buffer id below
  /// kNativeChannels (collectives on different signals may run concurrently, so each needs its
  /// own communicator: MPI matches collectives on one communicator in posting order).
  void open_native_channels();
  void close_native_channels();
  MPI_Comm native_comm(const WaitSite& site) const;
  /// A step whose requests complete in groups, in order: group g is the requests from the end of
  /// group g - 1 to `ends[g]` (the last group: to the end), and `done(g)` runs (outside the MPI
  /// mutex) as soon as groups 0..g have completed, while the later ones are still under way.
  struct NativeGroups {
    std::vector<std::size_t> ends;
    std::function<void(std::size_t)> done;
  };
  /// One step of an engine collective: posts its requests with `start(step, comm, requests)`
  /// (under the MPI mutex; returns the MPI error code).
  using NativeStep = std::function<int(std::size_t step, MPI_Comm comm, Requests& requests)>;
  /// Runs `steps` steps on the signal's communicator one after the other, each tested with
  /// yields until all its requests complete, the job aborts or the wait deadline passes (then the
  /// wait is recorded for the report, and the communicator is never used again); `after(step)`
  /// runs (outside the MPI mutex) once a step has completed, with its requests' `statuses` if given;
  /// a step's requests complete in `groups` if given.
  WaitStatus native_run(const WaitSite& site, std::size_t steps, const NativeStep& start,
                        const std::function<void(std::size_t)>& after = {}, std::vector<MPI_Status>* statuses = nullptr,
                        const NativeGroups* groups = nullptr);
  // native_run's parts, for schedules of their own (hierarchy.cc): the deadline of a call; under
  // the MPI mutex before its first post, my earlier puts complete and my stores public; tests
  // `requests` (in `groups` if given) with yields until they complete (Ok), the job aborts or the deadline passes; a
  // call that did not complete is recorded for the report and its communicator never reused.
  NativeDeadline native_deadline() const;
  void native_begin_locked();
  WaitStatus native_complete(NativeDeadline deadline, Requests& requests, MPI_Status* statuses = MPI_STATUSES_IGNORE,
                             const NativeGroups* groups = nullptr);
  WaitStatus native_abandon(const WaitSite& site, WaitStatus status);
  /// A floating-point allreduce of at most kNativePiece bytes, in pld's order (collectives.cc).
  WaitStatus canonical_allreduce(std::byte* data, std::size_t count, DType dtype, ReduceOp op, const WaitSite& site);
  /// allgather (`gather`: every member's `input` row) or all_to_all (row s of `input` to member
  /// s) over rows of `row_bytes`: an exchange (up to exchange_max()), else
  /// MPI_Iallgather / MPI_Ialltoall.
  WaitStatus block_exchange(bool gather, const void* input, void* target, std::size_t row_bytes, const WaitSite& site);
  /// Posts one exchange of rows of `bytes` in eager pieces on `comm` (exchange.cc); `gather`: the
  /// same `input` row to every member, else row s to member s. My own row is copied at once
  /// (`copy_own`). The requests go piece by piece, as piece_count(bytes) groups of 2 (P - 1): a
  /// piece's receives from every other member, then its sends (NativeGroups).
  int post_exchange(bool gather, const void* input, void* target, std::size_t bytes, MPI_Comm comm, Requests& requests,
                    bool copy_own = true) const;
  /// The ends of post_exchange's groups for rows of `bytes`, one per piece (NativeGroups::ends).
  std::vector<std::size_t> exchange_group_ends(std::size_t bytes) const;
  /// How all_to_all_v counts a row: `per_row` elements of `type` (MPI_BYTE and the row's bytes,
  /// or a type of one row).
  struct RowUnit {
    MPI_Datatype type;
    std::size_t per_row;
  };
  /// Posts all_to_all_v's exchange: blocks of `rows` rows of `row_bytes`, each sent as its count
  /// and its first `count` rows.
  int post_all_to_all_v(const void* input, void* target, std::size_t rows, std::size_t row_bytes, RowUnit unit,
                        const std::int32_t* send_counts, std::int32_t* recv_counts, MPI_Comm comm,
                        Requests& requests) const;
  /// all_to_all_v up to exchange_max(): each block in the eager pieces of a whole block, those
  /// past the count empty; count_all_to_all_v takes the counts from the receives' `statuses`.
  int post_all_to_all_v_pieces(const void* input, void* target, std::size_t block, std::size_t row_bytes,
                               const std::int32_t* send_counts, MPI_Comm comm, Requests& requests) const;
  void count_all_to_all_v(const MPI_Status* statuses, std::size_t block, std::size_t row_bytes,
                          const std::int32_t* send_counts, std::int32_t* recv_counts) const;
  /// Post on `comm` (exchange.cc) step `step` of a dissemination barrier of zero-byte messages,
  /// and a small broadcast of `bytes` from member `root`.
  int post_barrier_step(std::size_t step, MPI_Comm comm, Requests& requests) const;
  int post_broadcast(void* data, std::size_t bytes, int root, MPI_Comm comm, Requests& requests) const;
  /// The domain's members by node (hierarchy.cc): `first[k]` is the first domain rank of node k,
  /// `first.back()` the member count, `mine` my node's index, `world` domain rank -> world rank.
  /// Empty unless the window is shared on this node and has members elsewhere, consecutive per node.
  struct NodeRuns {
    std::vector<int> first, world;
    int mine = -1;
    std::size_t nodes() const { return first.empty() ? 0 : first.size() - 1; }  // how many nodes
    int leader(std::size_t k) const;                                            // domain rank of node k's leader
    bool columns(std::size_t total) const;  // whether `total` bytes over all members go in columns
    bool hierarchy() const;                 // more than one node, and more than one member on some
    bool tree(std::size_t bytes) const;     // whether a broadcast of `bytes` goes through node contacts
  };
  /// Computed once the window has its memory (allocate): a domain's members do not change.
  NodeRuns node_runs() const;
  /// Whether an allreduce of `bytes` runs hierarchically over runs_, and its schedules.
  bool hierarchical(std::size_t bytes, DType dtype) const;
  WaitStatus hierarchical_allreduce(std::byte*, std::size_t, DType, ReduceOp, const WaitSite&);
  WaitStatus column_gather(const std::byte*, std::byte*, std::size_t, const WaitSite&, const std::function<void()>&);
  /// Gathers every member's `row_bytes` at `data` in columns and reduces `count` elements at
  /// byte `offset` of the rows into `data` + `offset`: a tiny allreduce (offset 0) or
  /// reduce_scatter (my row of the whole input).
  WaitStatus column_reduce(std::byte* data, std::size_t row_bytes, std::size_t offset, std::size_t count, DType,
                           ReduceOp, const WaitSite&);
  /// A broadcast through one contact per node, in chunks (hierarchy.cc).
  WaitStatus node_broadcast(std::byte* data, std::size_t bytes, int root, const WaitSite& site);
  const std::byte* row_of(int d, const std::byte* data, const std::byte* rows, std::size_t) const;
  WaitStatus leader_gather(std::byte*, std::size_t, DType, ReduceOp, MPI_Comm, NativeDeadline);
  WaitStatus leader_chain(std::byte*, std::size_t, DType, ReduceOp, MPI_Comm, NativeDeadline);

  MpiBackend& engine_;
  std::uint64_t id_ = 0;     // the same on every member: names the window in messages
  MPI_Comm comm_;            // the domain's communicator (owned by MpiBackend)
  std::vector<int> target_;  // world rank -> rank in comm_, or -1
  MPI_Win win_ = MPI_WIN_NULL;
  std::byte* base_ = nullptr;  // local memory of heap offset lo_
  // Members that share this node's memory (world rank -> their heap offset lo_ here, or nullptr;
  // this process's own entry is base_ whenever the window is shared at all), the window that
  // maps them when the domain also has members elsewhere (reached by messages: win_ is then
  // MPI_WIN_NULL) and the communicator of the domain's members on this node.
  std::vector<std::byte*> shared_;
  bool all_shared_ = false;
  MPI_Win node_win_ = MPI_WIN_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  std::uint64_t lo_ = 0, bytes_ = 0;
  std::vector<char> dirty_;  // per target: puts/accumulates not yet flushed to it
  int dirty_count_ = 0;
  std::uint64_t last_call_ = 0;         // MpiBackend's call count when a call last used the window
  std::vector<MPI_Comm> native_;        // by signal buffer id (collectives.cc); empty: none
  std::vector<char> native_abandoned_;  // a collective left pending on it (a deadline or abort)
  NodeRuns runs_;                       // node_runs(), set by allocate
};

/// Signal buffer ids of a domain whose collectives can take the engine's own (a communicator each).
inline constexpr std::uint32_t kNativeChannels = 16;

}  // namespace pld::detail
