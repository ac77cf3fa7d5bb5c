// core_num lanes: one rank's share of a collective split over several threads. Lane 0 runs on the
// calling thread, lanes 1.. on worker threads the rank keeps for its lifetime.
#pragma once

#include <pld/types.hpp>

#include <functional>

namespace pld::detail {

/// Runs fn(lane) for lanes 1.. on the pool's threads and lane 0 on the calling one (lanes >= 2).
void run_lanes_pooled(int lanes, const std::function<void(int lane)>& fn);

/// Runs fn(lane) for every lane in [0, lanes) and returns when all are done; rethrows the first
/// exception a lane threw. One lane (the common case) is a plain call: no std::function, no pool.
template <class Fn>
void run_lanes(int lanes, Fn&& fn) {
  if (lanes <= 1) return fn(0);
  run_lanes_pooled(lanes, std::function<void(int)>(std::ref(fn)));  // a reference: no allocation
}

/// Element range [begin, end) of lane `lane` when `count` elements are split over `lanes`.
struct Range {
  Index begin, end;
  Index size() const { return end - begin; }
};
inline Range split(Index count, int parts, int part) {
  return {count * part / parts, count * (part + 1) / parts};
}

}  // namespace pld::detail
