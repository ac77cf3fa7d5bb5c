#include "core/pool.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <new>

namespace pld::detail {

namespace {

// Every pool of the process (a handful: each is a function-local static), for the fork handler.
constexpr std::size_t kMaxPools = 16;
std::array<std::atomic<ThreadPool*>, kMaxPools> g_pools{};
std::atomic<std::size_t> g_pool_count{0};

// The fallback when the pool is busy: the same contract on threads made for this call.
void run_on_fresh_threads(int n, const std::function<void(int)>& fn) {
  std::mutex mutex;
  std::exception_ptr error;
  auto guarded = [&](int i) {
    try {
      fn(i);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(guarded, i);
  guarded(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

ThreadPool::ThreadPool() {
  static const int registered = pthread_atfork(nullptr, nullptr, &ThreadPool::reset_all_after_fork);
  (void)registered;
  const std::size_t slot = g_pool_count.fetch_add(1);
  if (slot < kMaxPools) g_pools[slot].store(this);
  // (A pool past kMaxPools is not reset in a child: only a process that forks after using it
  // would notice, and pld makes two.)
}

void ThreadPool::reset_all_after_fork() {
  const std::size_t n = std::min(g_pool_count.load(), kMaxPools);
  for (std::size_t i = 0; i < n; ++i)
    if (ThreadPool* pool = g_pools[i].load()) pool->reset_after_fork();
}

void ThreadPool::reset_after_fork() {
  // The parent's threads do not exist here and a lock they held stays held: new synchronisation
  // objects, and the thread handles moved into storage that is never destroyed (destroying a
  // joinable std::thread terminates; joining one that does not exist blocks forever).
  new (&mutex_) std::mutex();
  new (&start_) std::condition_variable();
  new (&done_) std::condition_variable();
  (void)new std::vector<std::thread>(std::move(workers_));
  workers_.clear();
  fn_ = nullptr;
  n_ = 0;
  pending_ = 0;
  busy_ = false;
  error_ = nullptr;
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  std::unique_lock lock(mutex_);
  if (busy_) {
    lock.unlock();
    run_on_fresh_threads(n, fn);
    return;
  }
  busy_ = true;
  while (static_cast<int>(workers_.size()) < n - 1) {
    const int index = static_cast<int>(workers_.size()) + 1;
    workers_.emplace_back([this, index] { work(index); });
  }
  fn_ = &fn;
  n_ = n;
  pending_ = n - 1;
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
  busy_ = false;
  const std::exception_ptr theirs = error_;
  lock.unlock();
  if (mine) std::rethrow_exception(mine);
  if (theirs) std::rethrow_exception(theirs);
}

void ThreadPool::work(int index) {
  std::uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    start_.wait(lock, [&] { return generation_ != seen; });
    seen = generation_;
    if (index >= n_) continue;
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

}  // namespace pld::detail
