// pld-bench: the bare baselines of p2p, measured in the benchmark's own process before the ranks
// start: memcpy between two private buffers (next to put/get), and ping-pongs between two fork()ed
// processes on MAP_SHARED memory (next to notify->wait). They are what pld is judged against:
// the same bytes and the same handshake without a runtime.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pldbench {

/// The body of every spin loop of the ping-pongs, pld's and the bare ones alike (here and in
/// amo.cpp): `pause` on x86
/// (as pld's own waits relax, core/cpu_relax.h), a compiler barrier elsewhere.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  asm volatile("" ::: "memory");
#endif
}

/// One memcpy measurement of `bytes`: loop time and the bytes that did not arrive as sent.
struct CopyResult {
  double loop_ns = 0;
  std::int64_t wrong = 0;
};

/// memcpy of `bytes` between two fresh private buffers: `warmup` copies, then `iters` timed ones,
/// then a byte-for-byte check of the destination.
CopyResult bare_memcpy(std::uint64_t bytes, std::int64_t warmup, std::int64_t iters);

/// Half a round trip, in microseconds, of a ping-pong between this process and a fork()ed child
/// spinning on MAP_SHARED memory: on one int32 both write (`two_cells` false), or on one int32 per
/// direction, each on its own page (`two_cells` true: the layout of pld's signals). Throws
/// std::runtime_error when mmap or fork fails or the child dies.
double bare_pingpong_us(std::int64_t warmup, std::int64_t iters, bool two_cells, bool pin);

}  // namespace pldbench
