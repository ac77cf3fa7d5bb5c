#include "core/pool.h"

namespace pld::detail {

namespace {

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
