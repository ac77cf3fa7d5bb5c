// Spin-then-block for the host <-> rank sockets. Each side publishes a message counter in shared
// memory (ControlBlock::bells) right after it sends; the other side spins on that counter for a
// short budget before it blocks in the kernel. When messages follow each other quickly (a worker
// dispatching in a loop) nobody sleeps, which saves a wake-up — tens of microseconds on a VM —
// per message. Only when ranks do not outnumber cores (ShmBackend::may_spin).
#pragma once

#include <sched.h>

#include <immintrin.h>
#include <chrono>

namespace pld::detail {

/// How long a rank spins for its next message after answering one, and the host for a reply.
inline constexpr std::chrono::microseconds kRankIdleSpin{100};
inline constexpr std::chrono::microseconds kHostReplySpin{100};

/// Polls between two sched_yield() calls. The host and P ranks are P + 1 threads on (often) P
/// cores: a spinner must give its core away often, or the thread it waits for cannot run (pure
/// spinning measured 8 ms per dispatch at P=2 on 2 cores; no spinning at all ~110 us, because
/// every wake-up of an idle vCPU costs tens of microseconds; polling 4 times per yield ~20 us).
inline constexpr int kPollsPerYield = 4;

/// Calls `ready()` until it returns true or `budget` has passed; returns the last result.
template <class Ready>
bool spin_until(std::chrono::microseconds budget, Ready&& ready) {
  const auto end = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < kPollsPerYield; ++i) {
      if (ready()) return true;
      _mm_pause();
    }
    if (std::chrono::steady_clock::now() > end) return ready();
    sched_yield();  // let a runnable thread of this core (the host on a busy machine) go first
  }
}

}  // namespace pld::detail
