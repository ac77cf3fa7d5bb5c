// The baselines, measured in the same run as pld: a bare ping-pong on one int32 in MAP_SHARED
// memory between two fork()ed processes (spinning with _mm_pause) -- and, for reference, the same
// with one int32 per direction, the layout of pld's signals -- and memcpy in one process.
#include "common.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BENCH_PAUSE() _mm_pause()
#else
#define BENCH_PAUSE() asm volatile("" ::: "memory")
#endif

namespace bench {

namespace {

// Spins until the cell holds `want`. Every few million polls it checks that the peer is alive, so a
// dead peer is an error instead of a hang.
void spin_until(std::atomic_ref<std::int32_t> cell, std::int32_t want, pid_t peer) {
  for (std::uint64_t polls = 1; cell.load(std::memory_order_acquire) != want; ++polls) {
    BENCH_PAUSE();
    if (peer > 0 && (polls & ((1u << 22) - 1)) == 0 && waitpid(peer, nullptr, WNOHANG) != 0)
      throw std::runtime_error("bare ping-pong: the partner process died");
  }
}

}  // namespace

LatencyResult bare_pingpong(const Options& o, bool two_cells) {
  // One int32 both ways (the baseline), or one int32 per direction on separate pages (the
  // shape of pld's signals: each side polls its own cell, the peer writes into it).
  constexpr std::size_t kBytes = 8192;
  void* mem = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error(fmt::format("mmap: {}", std::strerror(errno)));
  auto* base = static_cast<std::int32_t*>(mem);
  std::atomic_ref<std::int32_t> ping(base[0]);                     // parent -> child
  std::atomic_ref<std::int32_t> pong(base[two_cells ? 1024 : 0]);  // child -> parent
  const std::int64_t total = o.lat_warmup + o.lat_iters;

  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (child == 0) {  // pong: answers 2i+1 with 2i+2
    int code = 0;
    try {
      pin_to_cpu(o.pin, 1);
      const pid_t parent = getppid();  // once: a system call per round trip would slow the pong down
      for (std::int64_t i = 0; i < total; ++i) {
        spin_until(ping, static_cast<std::int32_t>(2 * i + 1), parent);
        pong.store(static_cast<std::int32_t>(2 * i + 2), std::memory_order_release);
      }
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }

  LatencyResult r;
  r.iters = o.lat_iters;
  double t0 = 0;
  try {
    pin_to_cpu(o.pin, 0);
    for (std::int64_t i = 0; i < total; ++i) {
      if (i == o.lat_warmup) t0 = now_ns();
      ping.store(static_cast<std::int32_t>(2 * i + 1), std::memory_order_release);
      spin_until(pong, static_cast<std::int32_t>(2 * i + 2), child);
    }
    r.total_ns = now_ns() - t0;
  } catch (...) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    throw;
  }
  int status = 0;
  waitpid(child, &status, 0);
  sched_setaffinity(0, sizeof saved, &saved);  // the pld ranks fork from this process later
  munmap(mem, kBytes);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("bare ping-pong: partner failed");
  return r;
}

BwResult memcpy_bw(const Options& o, std::uint64_t bytes, const std::uint8_t* src) {
  // A fresh destination per size, like pld's window buffer of that size: the first copy pays its
  // page faults, the warm-up absorbs them.
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error(fmt::format("mmap({} bytes): {}", bytes, std::strerror(errno)));
  auto* dst = static_cast<std::uint8_t*>(mem);
  BwResult r;
  r.plan = bw_plan(o, bytes);
  // The compiler must not merge or drop the repeated copies into the same buffer.
  auto copy = [&] {
    std::memcpy(dst, src, bytes);
    asm volatile("" : : "r"(dst), "r"(src) : "memory");
  };
  double t = now_ns();
  copy();
  r.first_ns = now_ns() - t;
  for (std::int64_t i = 1; i < r.plan.warmup; ++i) copy();
  t = now_ns();
  for (std::int64_t i = 0; i < r.plan.iters; ++i) copy();
  r.total_ns = now_ns() - t;
  r.wrong = count_wrong(dst, bytes);
  munmap(mem, bytes);
  return r;
}

}  // namespace bench
