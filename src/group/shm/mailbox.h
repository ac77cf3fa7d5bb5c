// The shm group's message path between the host and its rank processes: two byte rings per rank
// in shared memory (host -> rank, rank -> host), so that a dispatch and its reply cost a copy into
// memory the other side reads, not a socket round trip of four system calls. Either side spins on
// the ring for a short budget, then sleeps: a rank on a futex over its message counter, the host
// in poll() on the ranks' sockets (a dead rank's socket reports POLLHUP) and one eventfd that a
// rank writes only when the host sleeps and the host asked to be woken by that reply.
//
// The sockets stay for what memory cannot carry: file descriptors (a record flagged kCarriesFd
// has its descriptor on the rank's socket, in the same order) and the end of a process.
//
// Rings are single-producer single-consumer: records of [u32 length][u32 flags][bytes], 8-byte
// aligned; a record that does not fit before the end of the ring leaves a wrap marker and starts
// at 0. The producer publishes its head with a release store after the bytes, the consumer its
// tail once it has copied the record out.
#pragma once

#include "core/cpu_relax.h"

#include <poll.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pld::detail {

/// How long a rank spins for its next message after answering one, and the host for a reply,
/// before sleeping. Always on, also when ranks outnumber cores: the spin yields every few polls,
/// so the thread it waits for gets the core, and a dispatch loop never pays a sleep and a wake-up
/// (each costs more than a whole spin-free hand-over on a VM).
inline constexpr std::chrono::microseconds kRankIdleSpin{100};
inline constexpr std::chrono::microseconds kHostReplySpin{100};

/// Polls between two sched_yield() calls. The host and P ranks are P + 1 threads on (often) P
/// cores: a spinner must give its core away often, or the thread it waits for cannot run.
inline constexpr int kPollsPerYield = 4;

/// Calls `ready()` until it returns true or `budget` has passed; returns the last result.
template <class Ready>
bool spin_until(std::chrono::microseconds budget, Ready&& ready) {
  const auto end = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < kPollsPerYield; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() > end) return ready();
    sched_yield();  // let a runnable thread of this core (the host on a busy machine) go first
  }
}

/// One direction of a rank's mailbox: a single-producer single-consumer byte ring.
struct alignas(64) MessageRing {
  alignas(64) std::atomic<std::uint64_t> head{0};  // bytes written (producer)
  alignas(64) std::atomic<std::uint64_t> tail{0};  // bytes released (consumer)
};

/// A record's flag: its file descriptor travels on the rank's socket.
inline constexpr std::uint32_t kCarriesFd = 1;

/// A message taken from a ring: valid until release().
struct Message {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  std::uint32_t flags = 0;
  std::uint64_t next = 0;  // the ring's tail once this message is released
};

/// The mailboxes of every rank of one group, in one shared mapping made before the ranks fork.
class Mailbox {
 public:
  /// Capacity of each ring; a message is at most kMaxMessage (protocol.h) bytes, and a ring holds
  /// two, so that one always fits after a wrap. Pages a ring never reaches are never touched.
  static constexpr std::size_t kToRankBytes = 256 * 1024;
  static constexpr std::size_t kToHostBytes = 256 * 1024;

  explicit Mailbox(int world_size);
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  /// Empties rank r's rings (before a process is forked for it).
  void reset(int r);

  // ----- host side -----
  /// Appends a message for rank r; false when its ring has no room (retry after a reply). The
  /// rank sees it at once when it spins; a sleeping rank wakes at the next ring_bell().
  bool post(int r, const void* data, std::size_t size, std::uint32_t flags = 0);
  /// Wakes the sleeping ranks that post() gave a message since the last call: one futex word for
  /// the whole group, so one system call wakes every rank of a dispatch round (a rank woken
  /// without a message of its own goes back to sleep).
  void ring_bell();
  /// Rank r's next reply, or false when none is waiting; release_reply() once read.
  bool peek_reply(int r, Message* out) const;
  void release_reply(int r, const Message& m);
  /// Whether rank r has a reply waiting (one load).
  bool has_reply(int r) const {
    const Lane& l = lane(r);
    return l.to_host.head.load(std::memory_order_acquire) != l.to_host.tail.load(std::memory_order_relaxed);
  }
  /// Waits until every rank r has sent `want[r]` replies in all (0: none needed), a rank reported
  /// a failure, or `timeout_ms` has passed: spins for `spin` first, then sleeps in poll() on
  /// `fds` (the ranks' sockets, whose hang-ups end the sleep; the eventfd is appended, then
  /// removed again). The rank whose reply completes the set wakes a sleeping host, and so does
  /// any rank reporting a failure.
  void host_wait(std::vector<pollfd>& fds, const std::vector<std::uint64_t>& want, std::chrono::microseconds spin,
                 int timeout_ms);

  // ----- rank side -----
  /// Blocks until a message for rank r is there (spinning `spin` first); false when the host is
  /// gone (the socket `fd` hung up). Release it with release_message() when done with it.
  bool receive(int r, int fd, std::chrono::microseconds spin, Message* out);
  void release_message(int r, const Message& m);
  /// Sends a reply to the host (waits while the host's ring is full); `urgent` wakes a sleeping
  /// host whatever count it waits for (a failure).
  void reply(int r, const void* data, std::size_t size, bool urgent);

 private:
  struct alignas(64) Lane {
    MessageRing to_rank;
    MessageRing to_host;
    alignas(64) std::atomic<std::uint32_t> sleeping{0};  // the rank sleeps on the group's bell
    alignas(64) std::atomic<std::uint64_t> replied{0};   // replies the rank has sent (rank only)
    alignas(64) std::atomic<std::uint64_t> want{0};      // replies the sleeping host waits for (0: none)
  };
  struct alignas(64) HostBell {
    std::atomic<std::uint32_t> sleeping{0};  // the host sleeps in host_wait()
    std::atomic<std::uint32_t> failures{0};  // urgent replies sent (failures)
    int eventfd = -1;
    alignas(64) std::atomic<std::uint32_t> bell{0};  // futex word of the sleeping ranks
  };

  Lane& lane(int r) const { return lanes_[static_cast<std::size_t>(r)]; }
  /// Whether every rank has sent the replies the host waits for (Lane::want).
  bool host_satisfied() const;
  std::byte* to_rank_data(int r) const;
  std::byte* to_host_data(int r) const;

  int world_size_;
  std::size_t bytes_ = 0;
  std::byte* base_ = nullptr;
  HostBell* host_ = nullptr;
  Lane* lanes_ = nullptr;
  std::vector<int> posted_;  // host: ranks given a message since the last ring_bell()
};

}  // namespace pld::detail
