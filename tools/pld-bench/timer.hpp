// pld-bench: timing. Inside a kernel: warm-up calls (not timed), a barrier so every rank starts
// the clock together, then `iters` calls timed with steady_clock; each rank records its own loop
// time. On the host: time per iteration = max over ranks of loop time / iters (the slowest rank
// finishes the collective). steady_clock is CLOCK_MONOTONIC, one clock for every process of the
// machine, so host-builtin stamps taken by different dispatches of one rank subtract exactly.
#pragma once

#include <pld/pld.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

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

/// The median of `v` (its upper middle for an even count; 0 when empty). Reorders `v`.
inline double median_of(std::vector<double>& v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

/// Runs `body(v)` for N variants v in short batches that take turns (v = 0, 1, ..., N-1, 0, ...),
/// warmup calls of each first (not timed), then about `iters` timed calls of each; returns each
/// variant's median batch in nanoseconds per call. The variants see the same machine at the same
/// time, so their ratios are not at the mercy of a neighbour that runs during one of them.
template <std::size_t N, class Body>
std::array<double, N> interleaved_medians(std::int64_t warmup, std::int64_t iters, Body&& body) {
  constexpr std::int64_t kBatch = 128;  // calls per batch: a few microseconds at most sizes
  for (std::int64_t i = 0; i < warmup; ++i)
    for (std::size_t v = 0; v < N; ++v) body(v);
  const std::int64_t batch = std::clamp<std::int64_t>(iters / 16, 1, kBatch);
  const std::int64_t batches = std::max<std::int64_t>(1, iters / batch);
  std::array<std::vector<double>, N> per_call;
  for (std::int64_t k = 0; k < batches; ++k)
    for (std::size_t v = 0; v < N; ++v) {
      const double t0 = now_ns();
      for (std::int64_t i = 0; i < batch; ++i) body(v);
      per_call[v].push_back((now_ns() - t0) / static_cast<double>(batch));
    }
  std::array<double, N> medians{};
  for (std::size_t v = 0; v < N; ++v) medians[v] = median_of(per_call[v]);
  return medians;
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
inline constexpr int kTime3 = 8;    // put_signal: the floor loop ns (put + bare release store)
inline constexpr int kFields = 9;

/// Per-iteration microseconds from per-rank loop nanoseconds: max over ranks / iters.
inline double per_iter_us(double max_loop_ns, std::int64_t iters) {
  return iters > 0 ? max_loop_ns / static_cast<double>(iters) / 1e3 : 0.0;
}

}  // namespace pldbench
