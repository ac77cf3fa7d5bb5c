// pld-bench-p2p: what its parts share (common.cpp: helpers; baseline.cpp: bare ping-pong and memcpy;
// pld_side.cpp: the pld kernels; report.cpp: table and JSON; main.cpp: options and the rounds).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

/// Command-line settings (main.cpp documents each flag).
struct Options {
  int rounds = 3;  // each round measures everything once, baseline next to pld; the table shows medians
  std::int64_t lat_iters = 200000;
  std::int64_t lat_warmup = 20000;
  std::vector<std::uint64_t> sizes{64ull << 10, 1ull << 20, 64ull << 20};
  std::uint64_t bw_bytes = 2ull << 30;  // bytes moved per bandwidth measurement (sets the iterations)
  std::int64_t iters = 0;               // bandwidth iterations; 0 = bw_bytes / size, clamped
  std::int64_t warmup = 0;              // bandwidth warm-up iterations; 0 = iters / 10, at least 2
  std::int64_t min_iters = 20;
  std::int64_t max_iters = 1000000;
  std::uint64_t heap_bytes = 0;  // 0 = max(256 MiB, largest size + 2 MiB)
  bool pin = false;              // pin rank / process r to CPU r
  std::string json;
};

/// Iteration counts of one bandwidth measurement.
struct BwPlan {
  std::uint64_t bytes = 0;
  std::int64_t warmup = 0;
  std::int64_t iters = 0;
};
BwPlan bw_plan(const Options& o, std::uint64_t bytes);

/// One latency measurement: `iters` round trips after `warmup`; latency is half a round trip.
struct LatencyResult {
  std::int64_t iters = 0;
  double total_ns = 0;  // timed round trips
  double half_rtt_ns() const { return iters ? total_ns / static_cast<double>(iters) / 2.0 : 0.0; }
};

/// One bandwidth measurement of `plan.iters` copies of `plan.bytes`.
struct BwResult {
  BwPlan plan;
  double total_ns = 0;     // the timed copies (after warm-up)
  double first_ns = 0;     // the very first copy: page faults on fresh memory land here
  std::int64_t wrong = 0;  // bytes that did not arrive as sent (checked after timing)
  double gbps() const {
    return total_ns > 0 ? static_cast<double>(plan.bytes) * static_cast<double>(plan.iters) / total_ns : 0.0;
  }
  double first_gbps() const { return first_ns > 0 ? static_cast<double>(plan.bytes) / first_ns : 0.0; }
};

/// Everything measured in one round. Each pld number is taken right after its baseline, so slow
/// drifts of the machine (frequency, neighbours' memory traffic) hit both sides of a ratio alike.
struct Round {
  LatencyResult lat_pld, lat_bare, lat_bare2;  // bare: one int32; bare2: one int32 per direction
  std::vector<BwResult> put, get, memcpy_;     // one per size, in Options::sizes order
};
using Results = std::vector<Round>;

inline double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

/// Pins the calling process to CPU `index` modulo the online CPUs (no-op when `pin` is false).
void pin_to_cpu(bool pin, int index);

/// The byte every benchmark buffer holds at position i (so a copy can be checked).
inline std::uint8_t pattern(std::uint64_t i) {
  return static_cast<std::uint8_t>(i * 131u + 7u);
}
void fill_pattern(std::uint8_t* p, std::uint64_t n);
/// Number of bytes of `p[0, n)` that differ from the pattern.
std::int64_t count_wrong(const std::uint8_t* p, std::uint64_t n);

// The measurements.
/// Bare ping-pong between two fork()ed processes on one int32 (`two_cells` = false, the issue's
/// baseline) or on one int32 per direction, each on its own page (the layout of pld's signals).
LatencyResult bare_pingpong(const Options& o, bool two_cells);  // baseline.cpp
/// memcpy of `bytes` from `src` into a fresh buffer, in this process.
BwResult memcpy_bw(const Options& o, std::uint64_t bytes, const std::uint8_t* src);  // baseline.cpp
/// One pld::run: the notify/wait ping-pong between two ranks.
LatencyResult pld_latency(const Options& o);  // pld_side.cpp
/// One pld::run: put then get of `bytes` between two ranks.
struct PutGet {
  BwResult put, get;
};
PutGet pld_bandwidth(const Options& o, std::uint64_t bytes);  // pld_side.cpp

// Output (report.cpp).
void print_header(const Options& o);
/// Prints the table of medians over the rounds; returns the number of targets missed.
int print_table(const Options& o, const Results& r);
void write_json(const Options& o, const Results& r, const std::string& path);

}  // namespace bench
