#include "coll/lanes.h"

#include "core/pool.h"

namespace pld::detail {

void run_lanes_pooled(int lanes, const std::function<void(int)>& fn) {
  static ThreadPool* pool = new ThreadPool();  // lives as long as the rank process
  pool->run(lanes, fn);
}

}  // namespace pld::detail
