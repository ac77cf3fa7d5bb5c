// The bare dispatch round and the process-switch cost (bare_round.hpp).
#include "bare_round.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <immintrin.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <stdexcept>

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPollsPerYield = 4;  // as pld's host and ranks between dispatches

struct alignas(64) Shared {
  alignas(64) std::atomic<std::uint64_t> round{0};
  alignas(64) std::atomic<std::uint64_t> replies{0};
};

template <class Ready>
void spin_yield(Ready&& ready) {
  for (int i = 1; !ready(); ++i) {
    _mm_pause();
    if (i % kPollsPerYield == 0) sched_yield();
  }
}

Shared* map_shared() {
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("bare round: mmap failed");
  return new (p) Shared();
}

}  // namespace

std::vector<double> bare_rounds(int ranks, int rounds, int warmup) {
  Shared* s = map_shared();
  constexpr std::uint64_t kStop = ~0ull;
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("bare round: fork failed");
    if (pid == 0) {
      std::uint64_t seen = 0;
      for (;;) {
        std::uint64_t now = 0;
        spin_yield([&] { return (now = s->round.load(std::memory_order_acquire)) != seen; });
        if (now == kStop) _exit(0);
        seen = now;
        s->replies.fetch_add(1, std::memory_order_acq_rel);
      }
    }
    pids.push_back(pid);
  }
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(rounds));
  const auto want = static_cast<std::uint64_t>(ranks);
  for (int i = 0; i < warmup + rounds; ++i) {
    const auto t0 = Clock::now();
    s->replies.store(0, std::memory_order_relaxed);
    s->round.fetch_add(1, std::memory_order_acq_rel);
    spin_yield([&] { return s->replies.load(std::memory_order_acquire) == want; });
    if (i >= warmup) out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  s->round.store(kStop, std::memory_order_release);
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  munmap(s, sizeof(Shared));
  return out;
}

double process_switch_us(int handoffs) {
  Shared* s = map_shared();
  cpu_set_t all;
  sched_getaffinity(0, sizeof all, &all);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  const auto limit = 2 * static_cast<std::uint64_t>(handoffs);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("process switch: fork failed");
  // Both processes on the current core; the round counter is the token: even = parent's turn.
  auto play = [&](std::uint64_t parity) {
    sched_setaffinity(0, sizeof one, &one);
    for (;;) {
      std::uint64_t v = 0;
      spin_yield([&] { return (v = s->round.load(std::memory_order_acquire)) % 2 == parity || v >= limit; });
      if (v >= limit) return;
      s->round.store(v + 1, std::memory_order_release);
    }
  };
  if (pid == 0) {
    play(1);
    _exit(0);
  }
  const auto t0 = Clock::now();
  play(0);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  sched_setaffinity(0, sizeof all, &all);
  waitpid(pid, nullptr, 0);
  munmap(s, sizeof(Shared));
  return us / static_cast<double>(limit);
}

}  // namespace bench
