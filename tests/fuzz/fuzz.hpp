// Randomized argument tests: seeds, case generators with boundary values, the rank-side failure
// log and the host-side runner.
//
// Environment (read by every fuzz test):
//   PLD_FUZZ_SEED   the seed of every case stream (default 1); a failure prints it
//   PLD_FUZZ_CASES  cases per op, split over the rank counts P = 1..4 as 4 : 3 : 2 : 1 (default
//                   2000): a case costs about 1 : 2 : 3.5 : 5 there (P = 3 and 4 share two cores),
//                   so every P gets its share of the time
//   PLD_FUZZ_CASE   run only this case index (with the seed and the test of the failure) to
//                   reproduce one failure alone
//
// Case i of an op with P ranks is a pure function of (seed, op, P, i): the host can describe a
// case a rank crashed in, and PLD_FUZZ_CASE=i reruns it without the cases before it.
#pragma once

#include "support.hpp"

#include <pld/pld.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace pld::fuzz {

/// The rank counts every fuzz test runs with.
inline constexpr int kMaxP = 4;

struct Settings {
  std::uint64_t seed = 1;
  std::int64_t cases = 2000;  // per op, over every P
  std::int64_t only = -1;     // PLD_FUZZ_CASE
};

inline Settings settings() {
  Settings s;
  if (const char* v = std::getenv("PLD_FUZZ_SEED"); v && *v) s.seed = std::strtoull(v, nullptr, 0);
  if (const char* v = std::getenv("PLD_FUZZ_CASES"); v && *v) s.cases = std::strtoll(v, nullptr, 0);
  if (const char* v = std::getenv("PLD_FUZZ_CASE"); v && *v) s.only = std::strtoll(v, nullptr, 0);
  return s;
}

/// Cases of one (op, P) test: P's share of the op's PLD_FUZZ_CASES, (kMaxP + 1 - P) tenths
/// (rounded up, so the shares of P = 1..4 add up to at least PLD_FUZZ_CASES).
inline std::int64_t cases_per_p(const Settings& s, int p) {
  static_assert(kMaxP == 4, "the shares are tenths: 4 + 3 + 2 + 1");
  return (s.cases * (kMaxP + 1 - p) + 9) / 10;
}

/// splitmix64: small, fast, and every case seeds its own stream.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) (n > 0).
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }
  /// Uniform in [lo, hi] (any lo <= hi, computed without overflow).
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
    const std::uint64_t x = span == 0 ? next() : next() % span;
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + x);
  }
  /// True with probability pct / 100.
  bool chance(int pct) { return below(100) < pct; }
  template <class T, std::size_t N>
  T pick(const T (&values)[N]) {
    return values[below(static_cast<std::int64_t>(N))];
  }

 private:
  std::uint64_t s_;
};

inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  return Rng(a * 0x100000001B3ull ^ b).next();
}

/// The stream of case `index` of op `op` with P ranks.
inline Rng case_rng(std::uint64_t seed, int op, int p, std::int64_t index) {
  return Rng(mix(mix(mix(seed, static_cast<std::uint64_t>(op)), static_cast<std::uint64_t>(p)),
                 static_cast<std::uint64_t>(index)));
}

// ----- boundary values ---------------------------------------------------------------------------

/// Offsets and extents that break naive `offset + extent > shape` checks or products.
inline Index boundary_index(Rng& r, Index near) {
  auto wrap = [](std::uint64_t v) { return static_cast<Index>(v); };  // modular, as C++20 defines it
  const Index values[] = {-1,
                          INT64_MIN,
                          INT64_MAX,
                          INT64_MAX - 1,
                          wrap(static_cast<std::uint64_t>(INT64_MAX) - static_cast<std::uint64_t>(near) + 1),
                          wrap(static_cast<std::uint64_t>(near) + 1),
                          near,
                          Index{1} << 31,
                          Index{1} << 32,
                          Index{1} << 62,
                          (Index{1} << 62) + 1,
                          -(Index{1} << 62),
                          (Index{1} << 61) + 1,
                          -2};
  return r.pick(values);
}

/// A peer: mostly in [0, p), sometimes just outside or absurd.
inline int draw_peer(Rng& r, int p) {
  if (!r.chance(12)) return static_cast<int>(r.below(p));
  const int values[] = {-1, p, p + 1, INT_MIN, INT_MAX, -p};
  return r.pick(values);
}

/// Row-major shape of rank 0..4 (sometimes 5..8) whose byte size fits `max_bytes`; sometimes a
/// zero extent next to a huge one (no elements, so it fits any buffer).
inline Dims draw_shape(Rng& r, std::size_t esz, std::size_t max_bytes, int min_rank = 0) {
  const int rank_pick[] = {0, 1, 1, 2, 2, 2, 3, 3, 4};
  int n = std::max(min_rank, r.chance(4) ? static_cast<int>(r.range(5, 8)) : r.pick(rank_pick));
  Dims s;
  for (int d = 0; d < n; ++d) s.push_back(r.chance(50) ? r.range(1, 3) : r.range(0, 9));
  if (n >= 2 && r.chance(3)) {  // [.., 0, .., huge, ..]
    s[static_cast<int>(r.below(n))] = 0;
    const int h = static_cast<int>(r.below(n));
    if (s[h] == 0) return s;
    Index others = 1;  // keep the product of the non-zero extents within int64 (a valid shape)
    for (int d = 0; d < n; ++d)
      if (d != h && s[d] != 0) others *= s[d];
    s[h] = std::max<Index>(1, (boundary_index(r, 4) & INT64_MAX) / others);
    return s;
  }
  auto bytes = [&] { return static_cast<unsigned __int128>(static_cast<std::uint64_t>(s.numel())) * esz; };
  if (n == 0 && bytes() > max_bytes) return Dims{0};
  while (bytes() > max_bytes) {  // halve the largest extent until it fits
    int big = 0;
    for (int d = 1; d < n; ++d)
      if (s[d] > s[big]) big = d;
    s[big] /= 2;
  }
  return s;
}

/// A box [offsets, offsets + extent) inside `shape`, sometimes broken in one place: an offset or
/// extent at a boundary value, a negative one, or the wrong rank.
struct Box {
  Dims offsets, extent;
};

inline Box draw_box(Rng& r, const Dims& shape, int mutate_pct = 25) {
  Box b;
  for (Index e : shape) {
    const Index x = e > 0 ? r.range(0, e) : 0;
    b.extent.push_back(r.chance(30) ? e : x);
    b.offsets.push_back(r.range(0, e - b.extent.back()));
  }
  if (!r.chance(mutate_pct)) return b;
  Dims& which = r.chance(50) ? b.offsets : b.extent;
  const int what = static_cast<int>(r.below(10));
  if (what == 0 && which.size() > 0) {
    Dims shorter;
    for (int d = 1; d < which.size(); ++d) shorter.push_back(which[d]);
    which = shorter;
  } else if (what == 1 && which.size() < kMaxDims) {
    which.push_back(r.range(0, 2));
  } else if (which.size() > 0) {
    const int d = static_cast<int>(r.below(which.size()));
    which[d] = boundary_index(r, shape[d]);
  }
  return b;
}

/// The domain case `index` of a test with P world ranks runs in: even cases the world, odd cases a
/// sub-domain (ranks 1..P-1, or {0, 2} for P = 3), so that domain-local ranks differ from world ranks.
inline std::vector<int> case_domain(int p, std::int64_t index) {
  std::vector<int> ranks;
  if (p == 1 || index % 2 == 0) {
    for (int r = 0; r < p; ++r) ranks.push_back(r);
  } else if (p == 3) {
    ranks = {0, 2};
  } else {
    for (int r = 1; r < p; ++r) ranks.push_back(r);
  }
  return ranks;
}

/// Part 0 runs the world's cases, part 1 the sub-domain's (see case_domain).
inline int case_part(int p, std::int64_t index) {
  return p == 1 ? 0 : static_cast<int>(index % 2);
}

// ----- rank-side failure log -------------------------------------------------------------------

/// Per-rank counters and a text log in host memory, so that the host sees them even after a crash.
inline constexpr int kLogBytes = 8192;
/// A rank stops its run of an op after this many failures (the rest would repeat them).
inline constexpr int kMaxFailures = 100;
inline constexpr int kProgress = 0, kCases = 1, kErrors = 2, kFailures = 3, kCounters = 4;

class RankLog {
 public:
  RankLog(Tensor<std::int64_t> counters, Tensor<std::uint8_t> log) : c_(counters.data()), log_(log) {}
  void start(std::int64_t index) { c_[kProgress] = index; }
  /// Counts a finished case (a collective case only on domain rank 0: `count` false elsewhere).
  void done(bool error, bool count = true) {
    if (!count) return;
    ++c_[kCases];
    if (error) ++c_[kErrors];
  }
  /// Counts a failure and logs its line while the log has room for all of it.
  void fail(const std::string& line) {
    ++c_[kFailures];
    char* text = reinterpret_cast<char*>(log_.data());
    const std::size_t used = std::strlen(text);
    if (used + line.size() + 2 > static_cast<std::size_t>(kLogBytes)) return;
    std::memcpy(text + used, line.data(), line.size());
    text[used + line.size()] = '\n';
  }
  std::int64_t failures() const { return c_[kFailures]; }

 private:
  std::int64_t* c_;
  Tensor<std::uint8_t> log_;
};

/// Host side of the logs: counters [P, kCounters] and text [P, kLogBytes].
struct Logs {
  HostTensor<std::int64_t> counters;
  HostTensor<std::uint8_t> text;
  explicit Logs(int p)
      : counters(HostTensor<std::int64_t>::zeros({p, kCounters})),
        text(HostTensor<std::uint8_t>::zeros({p, kLogBytes})) {}
  RankLog rank(int r) const { return RankLog(counters[r], text[r]); }
};

/// What the host learns from one fuzz run.
struct Outcome {
  std::int64_t cases = 0, errors = 0, failures = 0;
};

/// Runs `launch(start, logs)` (one pld::run whose ranks run cases [start, end)) until every case
/// ran. A run that fails (a rank crashed, or a failure outside the per-case checks) is reported
/// with the case the failing rank was in, described by `describe(index)`, and the run resumes
/// after it (at most 8 times).
template <class Launch, class Describe>
Outcome run_cases(const char* op, int p, Launch&& launch, Describe&& describe) {
  const Settings s = settings();
  const std::int64_t end = s.only >= 0 ? s.only + 1 : cases_per_p(s, p);
  std::int64_t start = s.only >= 0 ? s.only : 0;
  Outcome total;
  auto safe_describe = [&](std::int64_t at) -> std::string {
    try {
      return describe(at);
    } catch (const std::exception& e) {
      return std::string("(the case cannot be described: ") + e.what() + ")";
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (int restarts = 0; start < end; ++restarts) {
    Logs logs(p);
    for (int r = 0; r < p; ++r) logs.counters(r, kProgress) = -1;
    std::string crash;
    int crashed = -1;
    try {
      launch(start, end, logs);
    } catch (const RankError& e) {
      crash = e.what();
      crashed = e.rank();
      const auto cut = crash.find("): the rank process");  // drop the kernel's long signature
      if (cut != std::string::npos) crash = "rank " + std::to_string(crashed) + ": " + crash.substr(cut + 3);
    } catch (const std::exception& e) {
      crash = e.what();
      crashed = 0;
    }
    for (int r = 0; r < p; ++r) {
      total.cases += logs.counters(r, kCases);
      total.errors += logs.counters(r, kErrors);
      total.failures += logs.counters(r, kFailures);
      const std::string text(reinterpret_cast<const char*>(logs.text[r].data()));
      if (!text.empty()) ADD_FAILURE() << op << " P=" << p << " rank " << r << ":\n" << text;
    }
    if (crashed < 0) break;
    const std::int64_t at = std::max<std::int64_t>(logs.counters(crashed, kProgress), start);
    ++total.failures;
    ADD_FAILURE() << op << " P=" << p << ": the run failed in case " << at << " (seed " << s.seed
                  << ", rerun alone with PLD_FUZZ_SEED=" << s.seed << " PLD_FUZZ_CASE=" << at
                  << "): " << safe_describe(at) << "\n  " << crash.substr(0, 1500);
    if (restarts == 8) break;
    start = at + 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[fuzz] %-22s P=%d seed %llu: %lld cases (%lld named errors), %lld failures, %.2f s\n", op, p,
              static_cast<unsigned long long>(s.seed), static_cast<long long>(total.cases),
              static_cast<long long>(total.errors), static_cast<long long>(total.failures), secs);
  return total;
}

/// "seed S case I P p" as every failure line starts.
inline std::string case_tag(const char* op, int p, std::int64_t index) {
  return std::string(op) + " seed " + std::to_string(settings().seed) + " case " + std::to_string(index) +
         " P=" + std::to_string(p);
}

}  // namespace pld::fuzz
