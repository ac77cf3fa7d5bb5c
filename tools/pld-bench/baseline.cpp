#include "baseline.hpp"

#include "timer.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

namespace pldbench {

namespace {

std::byte* map_bytes(std::uint64_t bytes, int flags, const char* what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("p2p baseline: mmap of ") + std::to_string(bytes) + " bytes for " + what +
                             " failed: " + std::strerror(errno));
  return static_cast<std::byte*>(p);
}

void pin_self(bool pin, int index) {
  if (!pin) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(index % static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)), &set);
  sched_setaffinity(0, sizeof set, &set);
}

// Spins until the cell holds `want`. Every 4M polls it checks that the peer is alive, so a dead
// peer is an error instead of a hang (getppid/waitpid are outside the fast path).
void spin_until(std::atomic_ref<std::int32_t> cell, std::int32_t want, pid_t peer, bool peer_is_child) {
  for (std::uint64_t polls = 1; cell.load(std::memory_order_acquire) != want; ++polls) {
    spin_pause();
    if ((polls & ((1u << 22) - 1)) != 0) continue;
    const bool dead = peer_is_child ? waitpid(peer, nullptr, WNOHANG) != 0 : getppid() != peer;
    if (dead) throw std::runtime_error("p2p baseline: the ping-pong partner process died");
  }
}

}  // namespace

CopyResult bare_memcpy(std::uint64_t bytes, std::int64_t warmup, std::int64_t iters) {
  const std::uint64_t n = bytes ? bytes : 1;
  std::byte* src = map_bytes(n, MAP_PRIVATE, "the memcpy source");
  std::byte* dst = map_bytes(n, MAP_PRIVATE, "the memcpy target");
  for (std::uint64_t i = 0; i < n; ++i) src[i] = static_cast<std::byte>((i * 131u + 7u) & 0xff);
  // The compiler must not merge or drop the repeated copies into the same buffer.
  auto copy = [&] {
    std::memcpy(dst, src, bytes);
    asm volatile("" : : "r"(dst), "r"(src) : "memory");
  };
  for (std::int64_t i = 0; i < warmup; ++i) copy();
  const double t0 = now_ns();
  for (std::int64_t i = 0; i < iters; ++i) copy();
  CopyResult r;
  r.loop_ns = now_ns() - t0;
  std::memset(dst, 0, n);
  copy();
  for (std::uint64_t i = 0; i < bytes; ++i) r.wrong += dst[i] != src[i];
  munmap(src, n);
  munmap(dst, n);
  return r;
}

namespace {

// Ping-pong between this process and a fork()ed child on MAP_SHARED memory `mem` (kBytes):
// `turn(side, i)` is called for i in [0, warmup + iters) on each side (side 0 here, 1 in the
// child) and waits for / answers the partner; returns the loop time of the last `iters` rounds.
constexpr std::uint64_t kBytes = 8192;  // two pages: the two-cell form puts each cell on its own

template <class Turn>
double fork_pingpong_ns(std::byte* mem, std::int64_t warmup, std::int64_t iters, bool pin, Turn turn) {
  const std::int64_t total = warmup + iters;

  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    munmap(mem, kBytes);
    throw std::runtime_error(std::string("p2p baseline: fork failed: ") + std::strerror(errno));
  }
  if (child == 0) {
    int code = 0;
    try {
      pin_self(pin, 1);
      for (std::int64_t i = 0; i < total; ++i) turn(1, i, parent, false);
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  double t0 = now_ns(), loop_ns = 0;
  try {
    pin_self(pin, 0);
    for (std::int64_t i = 0; i < total; ++i) {
      if (i == warmup) t0 = now_ns();
      turn(0, i, child, true);
    }
    loop_ns = now_ns() - t0;
  } catch (...) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    sched_setaffinity(0, sizeof saved, &saved);
    munmap(mem, kBytes);
    throw;
  }
  int status = 0;
  waitpid(child, &status, 0);
  sched_setaffinity(0, sizeof saved, &saved);  // the ranks fork from this process later
  munmap(mem, kBytes);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("p2p baseline: the ping-pong partner process failed");
  return loop_ns;
}

double half_round_trip_us(double loop_ns, std::int64_t iters) {
  return iters > 0 ? loop_ns / static_cast<double>(iters) / 2 / 1e3 : 0.0;
}

}  // namespace

double bare_pingpong_us(std::int64_t warmup, std::int64_t iters, bool two_cells, bool pin) {
  std::byte* mem = map_bytes(kBytes, MAP_SHARED, "the ping-pong cells");
  auto* base = reinterpret_cast<std::int32_t*>(mem);
  std::atomic_ref<std::int32_t> ping(base[0]);                     // parent -> child
  std::atomic_ref<std::int32_t> pong(base[two_cells ? 1024 : 0]);  // child -> parent
  // The parent sends 2i+1 and waits for 2i+2; the child answers 2i+1 with 2i+2.
  const double loop_ns =
      fork_pingpong_ns(mem, warmup, iters, pin, [&](int side, std::int64_t i, pid_t peer, bool child) {
        if (side == 0) {
          ping.store(static_cast<std::int32_t>(2 * i + 1), std::memory_order_release);
          spin_until(pong, static_cast<std::int32_t>(2 * i + 2), peer, child);
        } else {
          spin_until(ping, static_cast<std::int32_t>(2 * i + 1), peer, child);
          pong.store(static_cast<std::int32_t>(2 * i + 2), std::memory_order_release);
        }
      });
  return half_round_trip_us(loop_ns, iters);
}

}  // namespace pldbench
