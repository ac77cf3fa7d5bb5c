// pld-bench's measurement rules — iterations, warm-up and the printed time — in one header that
// needs nothing but the standard library, so the Open MPI baseline bench/mpi/mpi_bench.cpp
// includes it too and both sides of a comparison run and print every row alike.
//
//   iterations  auto: budget / size, clamped to [min, max]
//   warm-up     auto: iterations / 10, at least a minimum; the first row of a process warms up
//               for as many calls as it times (a fresh process runs its first calls on cold
//               caches, pages and CPUs: with the short warm-up the first row read ~2x its steady
//               state), the other rows as the rule says
//   time        microseconds with 4 decimals below 1 us, 3 below 100 us, then nccl-tests' format
//               (2, 1, 0 decimals), 8 characters wide: sub-0.1 us rows keep their ratios
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pldbench::rules {

/// Timed iterations of a row of `bytes` when no count is given: budget / bytes in [min, max].
inline std::int64_t auto_iters(std::uint64_t budget, std::uint64_t bytes, std::int64_t min_iters,
                               std::int64_t max_iters) {
  const std::uint64_t per = std::max<std::uint64_t>(bytes, 1);
  return static_cast<std::int64_t>(std::clamp<std::uint64_t>(budget / per, static_cast<std::uint64_t>(min_iters),
                                                             static_cast<std::uint64_t>(max_iters)));
}

/// Warm-up calls of a row timed for `iters` calls: `given` when >= 0 (the user's -w), else
/// iters / 10, at least `min_warmup`; the first row of a process at least `iters`.
inline std::int64_t warmup_iters(std::int64_t given, std::int64_t iters, std::int64_t min_warmup, bool first_row) {
  if (given >= 0) return given;
  const std::int64_t w = std::max<std::int64_t>(min_warmup, iters / 10);
  return first_row ? std::max(w, iters) : w;
}

/// A time per call in microseconds, 8 characters wide (see the header).
inline std::string format_us(double us) {
  char buf[32];
  const char* f = us < 1 ? "%8.4f" : us < 100 ? "%8.3f" : us < 1e4 ? "%8.2f" : us < 1e6 ? "%8.1f" : "%8.0f";
  std::snprintf(buf, sizeof buf, f, us);
  return buf;
}

}  // namespace pldbench::rules
