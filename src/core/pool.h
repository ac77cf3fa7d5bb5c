// A small pool of threads that a rank process keeps for its lifetime, for work split over a fixed
// number of threads: the collectives' core_num lanes (coll/lanes.h) and TaskGraph's workers
// (task/task_graph.cc) each own one. A process forked from one that used a pool starts that pool
// afresh: the child has none of the parent's threads, so the pool forgets them (pthread_atfork).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pld::detail {

class ThreadPool {
 public:
  ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Runs fn(1..n-1) on pooled threads and fn(0) on the calling thread; returns when all have
  /// returned and rethrows the first exception one threw. While the pool is busy (a second
  /// caller, or a nested call from one of its own jobs) the call runs on fresh threads instead.
  void run(int n, const std::function<void(int)>& fn);

 private:
  void work(int index);
  /// In a forked child (one thread): forgets the parent's threads and any call in flight there.
  void reset_after_fork();
  static void reset_all_after_fork();

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;  // detached in spirit: they live as long as the process
  const std::function<void(int)>* fn_ = nullptr;
  int n_ = 0;
  int pending_ = 0;
  bool busy_ = false;
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
};

}  // namespace pld::detail
