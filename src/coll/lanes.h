// core_num lanes: one rank's share of a collective split over several threads. Lane 0 runs on the
// calling thread, lanes 1.. on worker threads the rank keeps for its lifetime.
#pragma once

#include <pld/types.hpp>

#include <functional>

namespace pld::detail {

/// Runs fn(lane) for every lane in [0, lanes) and returns when all are done; rethrows the first
/// exception a lane threw.
void run_lanes(int lanes, const std::function<void(int lane)>& fn);

/// Element range [begin, end) of lane `lane` when `count` elements are split over `lanes`.
struct Range {
  Index begin, end;
  Index size() const { return end - begin; }
};
inline Range split(Index count, int parts, int part) {
  return {count * part / parts, count * (part + 1) / parts};
}

}  // namespace pld::detail
