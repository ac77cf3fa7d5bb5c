// Helpers shared by the baselines and the pld side.
#include "common.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace bench {

BwPlan bw_plan(const Options& o, std::uint64_t bytes) {
  BwPlan p;
  p.bytes = bytes;
  p.iters = o.iters > 0
                ? o.iters
                : std::clamp<std::int64_t>(static_cast<std::int64_t>(o.bw_bytes / std::max<std::uint64_t>(bytes, 1)),
                                           o.min_iters, o.max_iters);
  p.warmup = o.warmup > 0 ? o.warmup : std::max<std::int64_t>(2, p.iters / 10);
  return p;
}

void pin_to_cpu(bool pin, int index) {
  if (!pin) return;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<int>(index % std::max(1L, n)), &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw std::runtime_error(fmt::format("sched_setaffinity(cpu {}): {}", index, std::strerror(errno)));
}

void fill_pattern(std::uint8_t* p, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) p[i] = pattern(i);
}

std::int64_t count_wrong(const std::uint8_t* p, std::uint64_t n) {
  std::int64_t wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i) wrong += p[i] != pattern(i);
  return wrong;
}

}  // namespace bench
