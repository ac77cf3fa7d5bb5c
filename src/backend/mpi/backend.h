// mpi backend: every MPI process is one rank. MpiBackend is the process's MPI state: pld's
// communicator, which node each rank is on, the control window (each rank's abort word and the
// lock of the fp16/bf16 atomic add), the windows of every domain met so far (MpiWindow, window.h)
// and the one MPI mutex. docs/design/mpi-backend.md explains every choice with the measurements
// behind it.
#pragma once

#include "backend/backend.h"
#include "backend/mpi/window.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace pld::detail {

/// MPI counts are int: one call or message moves at most 1 GiB (or 1 Gi elements).
inline constexpr std::size_t kMpiPiece = std::size_t{1} << 30;

/// Calls f(at, n) for the pieces [at, at + n) of `bytes`, each at most kMpiPiece (none for 0).
template <class F>
void for_each_mpi_piece(std::size_t bytes, F&& f) {
  for (std::size_t at = 0; at < bytes; at += kMpiPiece) f(at, static_cast<int>(std::min(kMpiPiece, bytes - at)));
}

class MpiBackend final : public BackendProcess {
 public:
  /// The process's backend. The first call initialises MPI (unless the program did), creates
  /// pld's communicator and control window, measures whether passive-target progress works and
  /// logs the MPI components in use. MPI is finalised at exit.
  static MpiBackend& instance();

  int world_size() const { return size_; }
  int rank() const { return rank_; }
  /// Whether world rank `rank` shares this process's node and PLD_MPI_SHARED lets pld use it.
  bool shares_memory_with(int rank) const {
    return share_ && node_[static_cast<std::size_t>(rank)] == node_[static_cast<std::size_t>(rank_)];
  }
  /// Number of nodes the job runs on.
  int nodes() const { return nodes_; }
  /// Whether members on other nodes are reached by messages (messages.cc) rather than RMA.
  bool messages() const { return messages_; }
  MPI_Comm comm() const { return comm_; }
  /// `bytes` of zero-filled memory that every process of the job maps, at its address in this
  /// process (collective; every rank on this node with PLD_MPI_SHARED on, else nullptr). Made once
  /// and kept until the backend is released: the race detector's shared block.
  std::byte* node_block(std::size_t bytes);
  /// One line: library, ranks and nodes, osc component, thread level, progress.
  const std::string& description() const { return description_; }

  /// The window of a comm domain (`members`: world ranks, ascending; `ordinal`: how many domains
  /// with the same members the call created before it) for `owner` (a persistent worker's id, or
  /// 0 for calls whose windows start zeroed), covering at least heap offsets [lo, hi) and never
  /// offsets at or above `limit` (PLD_HEAP_BYTES). Collective over every process, in the same
  /// order everywhere: the first domain with a member list creates its communicator (over all
  /// processes), and a window that does not cover the range is replaced by one that does (over
  /// the members). An owner's window (persistent buffers) grows to cover its old range too and
  /// takes over its contents at the same offsets. Returns nullptr on a process outside the domain.
  MpiWindow* window(std::uint64_t owner, const std::vector<int>& members, int ordinal, std::uint64_t lo,
                    std::uint64_t hi, std::uint64_t limit);
  /// The windows of this process in the current call: the ones notify and wait synchronise.
  /// Also ends the previous call's bookkeeping: the windows of calls without an owner that no
  /// call has used for `kIdleCalls` calls are freed (collective, in the same order everywhere:
  /// every process counts the same calls), so that a program cycling through many member lists
  /// does not keep a window in /dev/shm for each.
  void set_active(std::vector<MpiWindow*> windows);
  /// Counts a call (before its windows are requested).
  void begin_call() { ++calls_; }
  static constexpr std::uint64_t kIdleCalls = 32;
  /// Frees the windows of `owner` (collective, when a persistent worker ends).
  void release(std::uint64_t owner);
  /// Frees every window, the communicators and the control window (collective; at exit).
  void release();

  /// Every put, get, accumulate and message of this process is complete at its target (and
  /// every non-blocking transfer complete here: sources free, get destinations filled).
  void quiet() override;
  /// Puts issued before reach each target before those issued after (RMA: a flush of the
  /// targets written; messages and shared memory keep the order anyway).
  void fence() override;
  /// Makes this process's stores into its own windows visible to RMA, and RMA updates to its loads.
  void sync_local();
  /// The waits' deadline, spin rounds, and when a wait prints its first "still waiting" note
  /// (0: never; then every kWaitNoteEvery seconds).
  void set_wait_policy(double timeout, std::int64_t spin, double note) {
    wait_timeout_ = timeout;
    wait_spin_ = spin;
    wait_note_ = note;
  }
  double wait_timeout() const { return wait_timeout_; }
  /// Releases every wait of every rank (theirs return Aborted): sets each rank's abort word.
  void abort_all();
  /// Clears this rank's abort word, its ended wait and its operation history (start of a call,
  /// before its first barrier).
  void clear_abort();
  /// The wait the call's deadline or abort ended on this rank (valid = false: none).
  MpiWaitRecord ended_wait() const;
  /// This rank's operation history (every window records into it).
  const OpRing& history() const { return history_; }
  /// While a call runs: the SIGUSR1 counter and what prints a snapshot of a wait in progress.
  /// A wait past its spin phase calls `print` (on the waiting thread, outside the MPI mutex) when
  /// the counter has changed since the last snapshot. nullptr / {} turn it off.
  void set_snapshot(const std::atomic<unsigned>* counter, std::function<void(const MpiWaitRecord&)> print) {
    usr1_seen_.store(counter ? counter->load(std::memory_order_relaxed) : 0);
    snapshot_ = std::move(print);
    usr1_ = counter;
  }
  bool aborting() const override;
  /// Drives MPI progress once if no other thread is inside MPI.
  void progress() override;
  void acquire() override { sync_local(); }
  /// Runs one nonblocking collective on pld's communicator to completion: `start(comm, &request)`
  /// (e.g. MPI_Ibcast) is called under the MPI mutex, then the request is tested with yields —
  /// Open MPI's blocking calls would busy-poll and starve the ranks they wait for when ranks
  /// outnumber cores. Returns false when `limit` seconds (if > 0) pass first.
  template <class Start>
  bool collective(Start&& start, double limit = 0) {
    MPI_Request request;
    {
      std::lock_guard lock(mutex_);
      start(comm_, &request);
    }
    return complete(request, limit);
  }
  void barrier() {
    collective([](MPI_Comm comm, MPI_Request* request) { MPI_Ibarrier(comm, request); });
  }
  /// `count` items at `data` of process `root`, on every process.
  void broadcast(void* data, int count, MPI_Datatype type, int root) {
    collective([&](MPI_Comm comm, MPI_Request* request) { MPI_Ibcast(data, count, type, root, comm, request); });
  }
  /// `text` of process `root`, on every process (its length first).
  void broadcast(std::string& text, int root) {
    long long len = static_cast<long long>(text.size());
    broadcast(&len, 1, MPI_LONG_LONG, root);
    text.resize(static_cast<std::size_t>(len));
    broadcast(text.data(), static_cast<int>(len), MPI_CHAR, root);
  }
  /// PLD_MPI_NATIVE_COLL: 0 (never the engine's collectives), 1 (always, also where peers are
  /// addressable) or -1 (auto: where some peer is not). Throws UsageError for a malformed value.
  static int native_mode();
  /// Opens the engine collectives' communicators of the call's windows that lack them
  /// (collective, in set_active's window order) — again after a failed call has closed them.
  void open_native();
  /// After a failed call, on every process: closes the windows' engine-collective communicators
  /// (a collective may be pending on one) and discards the call's messages in flight (messages.cc).
  void end_failed_call();

  /// Turns a failed MPI call into a pld::Error naming it.
  void check(int rc, const char* what) const;

  /// The process-wide lock around every MPI call (Open MPI's osc/ucx misbehaves with concurrent
  /// calls from several threads; design §5).
  std::mutex& mpi_mutex() { return mutex_; }

 private:
  friend class MpiWindow;
  MpiBackend();
  void map_nodes();
  // messages.cc: members on other nodes through two-sided messages.
  struct Send {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::byte> buffer;
  };
  void open_messages();
  void register_window(MpiWindow& w, std::uint64_t id);
  void message_put(int rank, std::uint64_t window, std::uint64_t offset, const void* src, std::size_t bytes,
                   bool nbi = false);
  void message_put_signal(int rank, std::uint64_t window, std::uint64_t offset, const void* src, std::size_t bytes,
                          std::uint64_t signal_offset, std::int32_t value, NotifyOp op, bool nbi);
  void message_add(int rank, std::uint64_t window, std::uint64_t offset, const void* src, std::size_t count,
                   DType dtype);
  void message_notify(int rank, std::uint64_t window, std::uint64_t offset, std::int32_t value, NotifyOp op);
  void message_get(void* dst, int rank, std::uint64_t window, std::uint64_t offset, std::size_t bytes,
                   bool nbi = false);
  /// An atomic on a member on another node: a request applied by its serve loop with CPU atomics
  /// and a reply carrying the old value (after a fence of the other targets written, as notify).
  std::uint64_t message_atomic(int rank, std::uint64_t window, std::uint64_t offset, AmoOp op, DType dtype,
                               std::uint64_t operand, std::uint64_t compare);
  /// One put, add or put-with-signal: the header (with `prefix`, put_signal's signal offset) and
  /// the payload inline, or the header and then the payload straight from `src`, complete before
  /// it returns — or, `nbi`, left to quiet.
  void send_data(int rank, std::uint64_t window, MessageKind kind, std::int32_t value, std::uint64_t offset,
                 const void* src, std::size_t bytes, bool nbi = false, std::uint32_t op = 0,
                 const std::uint64_t* prefix = nullptr);
  /// Under the mutex: waits (serving messages) until every non-blocking payload send and get
  /// reply has completed. False when the job aborts first.
  bool complete_nbi();
  void post(int rank, const void* header, std::size_t header_bytes, const void* payload, std::size_t payload_bytes,
            int tag = 1);
  int next_reply_tag();
  void await_replies(std::vector<MPI_Request>& pieces, const char* what);
  void mark_written(int rank);
  bool fence_locked(int skip);
  void serve();
  void reap_sends();
  void drain_messages();
  void apply(int source, const MessageHeader& h, const std::byte* payload);
  std::byte* message_target(const MessageHeader& h, int source);
  template <class Done>
  bool drive(Done&& done);
  void open_control_window();
  void connect_peers();
  void probe_progress();
  void describe(int thread_level);
  bool complete(MPI_Request& request, double limit);
  /// Under the mutex: MPI_Win_sync of every active window; then every flush owed.
  void sync_active();
  /// Under the mutex: MPI_Win_sync of every active window (a fence where no window is RMA'd).
  void sync_windows();
  void flush_dirty();
  void allocate(MpiWindow& w, std::uint64_t lo, std::uint64_t bytes, bool keep);
  /// MPI_Win_allocate, or for a window with members on this node the shared allocation (with
  /// members elsewhere only with messages, and then no window across nodes); with messages plain
  /// pages where nobody shares it. Returns the MPI error code; under mutex_.
  int allocate_memory(MpiWindow& w, std::uint64_t bytes, void** base);
  void free_window(MpiWindow& w);

  mutable std::mutex mutex_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<int> node_;  // world rank -> index of its node (ranks of one node share memory)
  int nodes_ = 1;
  bool share_ = true;                       // PLD_MPI_SHARED
  std::atomic<int> dirty_windows_{0};       // dirty_.size(), readable without the mutex
  std::atomic<bool> active_shared_{false};  // every window of the call is all_shared()
  // messages.cc
  std::string transport_setting_;  // PLD_MPI_TRANSPORT: auto, rma or messages
  bool messages_ = false;
  MPI_Comm message_comm_ = MPI_COMM_NULL;
  std::vector<char> written_;          // per world rank: sent to since its last fence
  std::vector<char> acked_;            // per world rank: its last fence is answered
  std::atomic<int> written_count_{0};  // targets written since their last fence
  std::map<std::uint64_t, MpiWindow*> by_id_;
  std::deque<Send> sends_;                 // outstanding sends and their buffers, oldest first
  std::vector<MPI_Request> nbi_requests_;  // non-blocking puts' payload sends and gets' reply receives
  std::vector<std::byte> inbox_;
  int reply_tag_ = 2;
  MPI_Win control_ = MPI_WIN_NULL;
  std::int32_t* control_base_ = nullptr;
  MPI_Win node_block_ = MPI_WIN_NULL;  // node_block()
  std::byte* node_block_base_ = nullptr;
  std::map<std::vector<int>, MPI_Comm> comms_;                         // by member list; MPI_COMM_NULL outside it
  using WindowKey = std::tuple<std::uint64_t, std::vector<int>, int>;  // owner, members, ordinal
  std::map<WindowKey, std::unique_ptr<MpiWindow>> windows_;
  std::vector<MpiWindow*> active_;
  std::uint64_t calls_ = 0;
  std::vector<MpiWindow*> dirty_;   // windows with puts not yet flushed
  bool passive_progress_ = false;   // in effect (PLD_MPI_PROGRESS may override the measurement)
  bool measured_progress_ = false;  // what the start-up probe found
  std::string progress_setting_;    // PLD_MPI_PROGRESS: auto, passive or poll
  double wait_timeout_ = 300;
  double wait_note_ = 0;
  std::int64_t wait_spin_ = 0;
  std::string osc_, description_;
  MpiWaitRecord ended_wait_;  // guarded by mutex_
  OpRing history_;
  const std::atomic<unsigned>* usr1_ = nullptr;
  std::atomic<unsigned> usr1_seen_{0};
  std::function<void(const MpiWaitRecord&)> snapshot_;
};

inline int MpiWindow::target(int rank, std::uint64_t offset, std::size_t bytes) const {
  const auto r = static_cast<std::size_t>(rank);  // a negative rank becomes too large
  const int t = r < target_.size() ? target_[r] : -1;
  if (t < 0 || offset < lo_ || offset + bytes > lo_ + bytes_) [[unlikely]]
    outside(rank, offset, bytes);
  return t;
}

inline std::byte* MpiWindow::local_at(int rank, std::uint64_t offset) const {
  std::byte* base = rank == engine_.rank_ ? base_ : shared_[static_cast<std::size_t>(rank)];
  return base ? base + (offset - lo_) : nullptr;
}

/// Installs the SIGTERM handler that says what this rank was waiting on when mpirun ended the job.
void install_termination_report();

/// Control window layout (bytes): abort word, fp16/bf16 lock, progress probe (plain memory with messages).
inline constexpr std::uint64_t kControlAbort = 0;
inline constexpr std::uint64_t kControlLock = 64;
inline constexpr std::uint64_t kControlProbe = 128;
inline constexpr std::uint64_t kControlBytes = 192;

}  // namespace pld::detail
