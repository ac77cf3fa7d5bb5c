// ShmGroup: the rank processes of one job on the shm backend. It forks them (once), executes
// recorded orchestrator calls on them — streaming each rank's dispatches in program order over
// its socket, collecting replies, watching for deaths — and, on the first failure, releases every
// other rank's waits and turns the failure into a RankError that names the rank and the cause.
//   group.cc      construction, resident-tensor operations
//   lifecycle.cc  fork, start-up, reaping, replacing lost ranks, shutdown
//   execute.cc    one call: queues, sends, replies, host callbacks, failures
//   report.cc     hang reports from the shared control block
//   rank_loop.cc  the rank process's message loop
//   mailbox.cc    the message rings between the host and each rank
#pragma once

#include "backend/shm/backend.h"
#include "core/block.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "group/group.h"
#include "group/report.h"
#include "group/shm/mailbox.h"

#include <pld/detail/host.hpp>
#include <pld/error.hpp>

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace pld::detail {

struct DispatchRecord;

class ShmGroup final : public ProcessGroup {
 public:
  explicit ShmGroup(const GroupOptions& options);
  ~ShmGroup() override;
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  int world_size() const override { return static_cast<int>(ranks_.size()); }
  void execute(const HostSession& session) override;
  double last_kernel_seconds() const override { return last_kernel_s_; }
  /// Sends the operation's message (protocol.h DeviceAlloc..DeviceRead) to rank `r` and waits for
  /// its answer.
  void device_op(int r, const DeviceOp& op) override;
  /// Asks every rank to exit, then reaps them (SIGKILL after a grace period). Idempotent.
  void shutdown() noexcept override;
  /// Forks a new process for every rank that died.
  std::vector<int> replace_lost_ranks() override;
  bool alive(int r) const override { return ranks_[static_cast<std::size_t>(r)].alive; }

 private:
  struct Outgoing {
    std::vector<std::byte> bytes;
    int fd = -1;                 // descriptor to pass (Attach, resident-tensor staging)
    std::uint32_t block = 0;     // Attach: the block id
    std::int64_t dispatch = -1;  // index into the call's dispatch list
    bool fd_sent = false;        // the descriptor is on the socket already (the ring was full)
  };
  struct Rank {
    pid_t pid = -1;
    int fd = -1;
    bool alive = false;
    std::unordered_set<std::uint32_t> blocks;  // shared blocks this process has mapped
    std::deque<Outgoing> queue;
    std::uint64_t sent = 0, done = 0;
    std::uint64_t replies = 0;           // replies read from its mailbox (Mailbox::host_sleep's count)
    std::deque<std::int64_t> in_flight;  // dispatch indices sent and not yet answered, oldest first
  };
  struct Failure {
    int rank = -1;
    RankFailure cause = RankFailure::KernelError;
    std::int64_t dispatch = -1;
    std::string text;
    std::string report;
  };
  /// The host loop's state during one execute().
  struct Call {
    std::size_t next_callback = 0;
    std::exception_ptr callback_error;
    std::chrono::steady_clock::time_point abort_deadline{};
    unsigned usr1_seen = 0;
    std::vector<std::uint64_t> first_dispatch;  // swimlanes: each rank's first dispatch of this call
    std::vector<pollfd> pfds;                   // the ranks' sockets (hang-ups)
    std::vector<std::uint64_t> want;            // per rank: the reply count the sleeping host waits for
    // "Still waiting" notes (note_long_waits): when to look next, and per rank the wait noted
    // last (its start) and how many notes it got.
    std::chrono::steady_clock::time_point next_wait_look{};
    std::vector<std::pair<std::int64_t, int>> noted;
  };

  // lifecycle.cc
  void fork_ranks();
  void fork_rank(int r);
  /// Waits for every rank in `starting` to say it is ready, up to the startup timeout.
  void await_ready(const std::vector<int>& starting);
  /// Marks rank `r` dead, closes its socket and reaps it; returns how it ended.
  std::string mark_dead(int r);
  std::string reap_status(int r);
  std::string who(int r) const;

  // execute.cc
  /// Checks the ranks, clears the abort state and the windows, and queues the call's messages.
  void prepare_call(const HostSession& session, Call& call);
  void build_queues(const HostSession& session);
  /// Queues the messages a dispatch needs first: the blocks it maps, the domains it uses.
  void queue_prerequisites(const HostSession& session, const DispatchRecord& d, std::vector<bool>& domain_sent);
  void pump_sends(int r);
  /// Fills the poll set; returns whether a rank still has work (in flight or sendable).
  bool fill_poll_set(Call& call) const;
  /// Runs the host callbacks placed at the gate (every dispatch before it has finished).
  void run_callbacks(const HostSession& session, Call& call);
  /// After a failure: SIGKILLs the ranks still busy once the abort grace has passed.
  void enforce_abort_deadline(Call& call);
  /// Reads the replies that arrived; with none, spins briefly on the mailboxes, then sleeps until
  /// every busy rank has answered everything it was sent (or one failed, died, or the slice ends).
  void await_replies(const HostSession& session, Call& call);
  /// Reads rank r's replies in its mailbox; returns how many.
  int read_replies(int r, const HostSession& session);
  /// Sends `out` to rank r: its descriptor on the socket, its bytes into the mailbox. False when
  /// either has no room (retry later). Throws Error when the socket is gone.
  bool send_to(int r, Outgoing& out);
  /// Ends the call: swimlane merge, kernel time, the ranks' wipe (wipe_after_call); throws the
  /// call's failure.
  void finish_call(const HostSession& session, Call& call);
  /// Sends every rank whose heap may be dirty a Wipe: it zeroes its own heap while the host returns.
  void send_wipes();
  /// Waits until every live rank has carried out the Wipes it was sent.
  void await_wipes();
  void on_death(int r);
  void fail(Failure failure);
  void drop_dispatches(Rank& rank);

  // report.cc
  /// Prints the hang report when SIGUSR1 arrived since the last look.
  void report_if_asked(const HostSession& session, Call& call) const;
  /// Prints a one-line note for every rank whose wait has lasted PLD_WAIT_NOTE seconds, and
  /// again every kWaitNoteEvery seconds, until the deadline.
  void note_long_waits(const HostSession& session, Call& call) const;
  std::string wait_report(const HostSession& session) const;
  /// Every rank's state, wait, expected writers and last operations, the wait-for graph and its
  /// verdict (group/hang_report.h), after `title`; writes the graph as DOT and names the file.
  std::string hang_report(const HostSession& session, const std::string& title) const;

  GroupOptions options_;
  // SIGUSR1 asks for a hang report while a call runs (report_if_asked); installed for the group's
  // lifetime, not per call (two system calls per dispatch), and undone in the rank processes.
  Usr1Handler usr1_;
  std::unique_ptr<RaceBlock> race_;    // the race detector's shared block (PLD_DEBUG=race), else null
  std::unique_ptr<DebugBlock> debug_;  // debug mode's shared block (PLD_DEBUG), else null; outlives backend_
  std::unique_ptr<ShmBackend> backend_;
  std::unique_ptr<Mailbox> mailbox_;
  std::vector<Rank> ranks_;
  /// Index of the first dispatch that must wait for the next host callback (or none).
  std::int64_t gate_ = -1;
  std::vector<std::uint64_t> dirty_;  // per rank: heap bytes that may be non-zero
  bool wipe_ = false;                 // zero every dirty byte before the next call (after a loss)
  std::vector<std::uint32_t> wipes_;  // per rank: Wipe messages sent (RankSlot::wiped counts those done)
  double last_kernel_s_ = 0;
  std::uint64_t calls_ = 0;               // calls executed (swimlane trace file names)
  std::vector<std::uint64_t> kernel_ns_;  // per rank, during the current call
  std::uint64_t call_base_ = 0;           // sequence number of the current call's first dispatch
  bool aborting_ = false;
  Failure failure_;
  bool shut_down_ = false;
};

/// The language binding's fork hooks (set_rank_fork_hooks; lifecycle.cc).
const RankForkHooks& rank_fork_hooks();

/// The rank process (rank_loop.cc): serves the host's messages from its mailbox (descriptors on
/// socket `fd`) until shutdown; never returns.
[[noreturn]] void rank_main(int rank, int fd, ShmBackend* backend, Mailbox* mailbox, pid_t host_pid,
                            const std::vector<std::pair<std::uint32_t, BlockRecord>>& inherited,
                            const std::vector<int>& close_fds);

}  // namespace pld::detail
