#include "coll/lanes.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pld::detail {

namespace {

// A small fixed pool: each worker runs the current job's lane when the generation advances.
class LanePool {
 public:
  static LanePool& instance() {
    static LanePool* pool = new LanePool();  // lives as long as the rank process
    return *pool;
  }

  void run(int lanes, const std::function<void(int)>& fn) {
    std::unique_lock lock(mutex_);
    while (static_cast<int>(workers_.size()) < lanes - 1) {
      const int index = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, index] { work(index); });
    }
    fn_ = &fn;
    lanes_ = lanes;
    pending_ = lanes - 1;
    error_ = nullptr;
    ++generation_;
    lock.unlock();
    start_.notify_all();
    std::exception_ptr mine;
    try {
      fn(0);
    } catch (...) {
      mine = std::current_exception();
    }
    lock.lock();
    done_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work(int index) {
    std::uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      start_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= lanes_) continue;
      const auto* fn = fn_;
      lock.unlock();
      std::exception_ptr err;
      try {
        (*fn)(index);
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* fn_ = nullptr;
  int lanes_ = 0;
  int pending_ = 0;
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
};

}  // namespace

void run_lanes_pooled(int lanes, const std::function<void(int)>& fn) { LanePool::instance().run(lanes, fn); }

}  // namespace pld::detail
