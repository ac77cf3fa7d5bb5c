// pld-bench: timing. Inside a kernel: warm-up calls (not timed), a barrier so every rank starts
// the clock together, then `iters` calls timed with steady_clock; each rank records its own loop
// time. On the host: time per iteration = max over ranks of loop time / iters (the slowest rank
// finishes the collective). steady_clock is CLOCK_MONOTONIC, one clock for every process of the
// machine, so host-builtin stamps taken by different dispatches of one rank subtract exactly.
#pragma once

#include <pld/pld.hpp>

#include <chrono>
#include <cstdint>

namespace pldbench {

inline double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

/// Runs `body` warmup times, barriers on `signal`, then times `iters` calls. Returns nanoseconds.
template <class Body>
double time_loop(const pld::DistributedTensor<std::int32_t>& signal, std::int64_t warmup, std::int64_t iters,
                 Body&& body) {
  for (std::int64_t i = 0; i < warmup; ++i) body();
  pld::tensor::barrier(signal);
  const double t0 = now_ns();
  for (std::int64_t i = 0; i < iters; ++i) body();
  return now_ns() - t0;
}

/// Result fields of one (row, rank) cell of the results tensor [rows, ranks, kFields].
inline constexpr int kTime0 = 0;    // composite loop ns (p2p: put loop)
inline constexpr int kWrong0 = 1;   // composite wrong elements (p2p: put)
inline constexpr int kTime1 = 2;    // p2p: get loop ns
inline constexpr int kWrong1 = 3;   // builtin wrong elements (p2p: get)
inline constexpr int kStamp0 = 4;   // builtin: steady_clock before the timed dispatches
inline constexpr int kStamp1 = 5;   // builtin: after
inline constexpr int kLatency = 6;  // p2p: notify->wait round-trip loop ns (rank 0)
inline constexpr int kTime2 = 7;    // put_signal, nbi: the third loop ns
inline constexpr int kTime3 = 8;    // put_signal: the floor loop ns (put + bare exchange)
inline constexpr int kFields = 9;

/// Per-iteration microseconds from per-rank loop nanoseconds: max over ranks / iters.
inline double per_iter_us(double max_loop_ns, std::int64_t iters) {
  return iters > 0 ? max_loop_ns / static_cast<double>(iters) / 1e3 : 0.0;
}

}  // namespace pldbench
