// The per-rank task model: dependencies, threads, deferred completion (defer_wait) and every
// misuse of it.
#include "support.hpp"

#include <atomic>
#include <mutex>

namespace pld::test {
namespace {

// A diamond a -> {b, c} -> d plus an independent e, on `threads` threads: each task records when
// it started and ended (a global sequence), and every task must start after its dependencies ended.
void diamond_kernel(Tensor<std::int32_t> out, int threads) {
  std::atomic<int> seq{0};
  std::int32_t start[5] = {}, end[5] = {};
  auto body = [&](int i) {
    return [&, i] {
      start[i] = ++seq;
      end[i] = ++seq;
    };
  };
  TaskGraph g(threads, "diamond");
  auto a = g.add("a", body(0));
  auto b = g.add("b", body(1), {a});
  auto c = g.add("c", body(2), {a});
  g.add("d", body(3), {b, c});
  g.add("e", body(4));
  EXPECT_EQ(g.size(), 5);
  g.run();
  out(0) = start[1] > end[0] && start[2] > end[0] && start[3] > end[1] && start[3] > end[2] && end[4] > 0;
}
void diamond_program(Host& h, HostTensor<std::int32_t>& out, int threads) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, diamond_kernel, out[r], threads);
}

TEST(Tasks, DependenciesOnOneOrManyThreads) {
  for (int threads : {1, 2, 4}) {
    auto out = HostTensor<std::int32_t>::zeros({2, 1});
    pld::run(ranks(2), diamond_program, out, threads);
    EXPECT_EQ(out(0, 0), 1) << threads;
    EXPECT_EQ(out(1, 0), 1) << threads;
  }
}

// A graph run on several threads in this process, outside any kernel, starts the pool's threads
// here; rank processes forked afterwards have none of them and must start their own.
TEST(Tasks, AGraphRunBeforeTheRanksForkDoesNotStrandThem) {
  PLD_REQUIRE_SHM();
  auto here = HostTensor<std::int32_t>::zeros({1, 1});
  diamond_kernel(here[0], 3);
  EXPECT_EQ(here(0, 0), 1);
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  pld::run(ranks(2), diamond_program, out, 3);
  EXPECT_EQ(out(0, 0), 1);
  EXPECT_EQ(out(1, 0), 1);
}

// Rank 0's waiter defers on "rank 1 delivered"; rank 1 delivers only after rank 0's independent
// task told it to go. With one thread a blocking wait would deadlock; a deferred one does not.
void defer_kernel(DistributedTensor<float> data, DistributedTensor<std::int32_t> sig, Tensor<float> out, int threads) {
  const int me = rank(get_comm_ctx(data));
  if (me == 1) {
    system::wait(sig, {0, 0}, 1, WaitCmp::Ge);  // "go" from rank 0's independent task
    tensor::put(data, 0, out);                  // out holds rank 1's payload
    system::notify(sig, 0, {1, 0}, 1, NotifyOp::AtomicAdd);
    return;
  }
  TaskGraph g(threads, "consumer");
  auto waiter = g.add("await payload", [&] { system::defer_wait(sig, {1, 0}, 1); });
  g.add("go", [&] { system::notify(sig, 1, {0, 0}, 1, NotifyOp::AtomicAdd); });
  g.add("consume", [&] { tensor::get(out, 0, data); }, {waiter});
  g.run();
}
void defer_program(Host& h, HostTensor<float>& out, int threads) {
  auto data = h.window<float>(h.alloc_window_buffer({4}, DType::FP32, "data"), {4});
  auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
  for (int r = 0; r < 2; ++r) h.dispatch(r, defer_kernel, data, sig, out[r], threads);
}

TEST(Tasks, DeferredWaiterCompletesWhenItsConditionHolds) {
  for (int threads : {1, 3}) {
    auto out = HostTensor<float>::zeros({2, 4});
    for (Index i = 0; i < 4; ++i) out(1, i) = static_cast<float>(10 + i);
    pld::run(ranks(2), defer_program, out, threads);
    for (Index i = 0; i < 4; ++i) EXPECT_EQ(out(0, i), static_cast<float>(10 + i)) << threads;
  }
}

// Waiter A needs cell X, which task D sets once waiter B (cell Y, set by task N) completed: the
// poller must watch waiters deferred after it started.
void chained_waiters_kernel(DistributedTensor<std::int32_t> sig, int threads) {
  const int me = rank(get_comm_ctx(sig));
  TaskGraph g(threads, "chained");
  auto a = g.add("await X", [&] { system::defer_wait(sig, {0, 0}, 1); });
  auto b = g.add("await Y", [&] { system::defer_wait(sig, {0, 1}, 1); });
  g.add("set Y", [&] { system::notify(sig, me, {0, 1}, 1, NotifyOp::AtomicAdd); });
  g.add("set X", [&] { system::notify(sig, me, {0, 0}, 1, NotifyOp::AtomicAdd); }, {b});
  g.add("after X", [] {}, {a});
  g.run();
}
void chained_waiters(Host& h, int threads) {
  auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, chained_waiters_kernel, sig, threads);
}

TEST(Tasks, WaitersDeferredLaterArePolledToo) {
  for (int threads : {1, 2, 3})
    for (int k = 0; k < 5; ++k) pld::run(ranks(2, 10), chained_waiters, threads);
}

// Deferred conditions with every comparison: a cell that starts at 0 and is Set to -3 by task
// "set" satisfies Eq -3, Ne 0, Lt 0, Le -3, Gt -4; the waiter holding all five completes once the
// Set happened, and "after" (its dependant) sees the cell at -3.
void every_cmp_kernel(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> out) {
  const int me = rank(get_comm_ctx(sig));
  TaskGraph g(2, "every cmp");
  auto w = g.add("await -3", [&] {
    system::defer_wait(sig, {1, 0}, -3, WaitCmp::Eq);
    system::defer_wait(sig, {1, 0}, 0, WaitCmp::Ne);
    system::defer_wait(sig, {1, 0}, 0, WaitCmp::Lt);
    system::defer_wait(sig, {1, 0}, -3, WaitCmp::Le);
    system::defer_wait(sig, {1, 0}, -4, WaitCmp::Gt);
  });
  g.add("set", [&] { system::notify(sig, me, {1, 0}, -3, NotifyOp::Set); });
  g.add("after", [&] { out(0) = tile::read(sig, {1, 0}); }, {w});
  g.run();
}

TEST(Tasks, DeferredConditionsTakeEveryComparison) {
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  pld::run(ranks(2, 10), [&](Host& h) {
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
    for (int r = 0; r < 2; ++r) h.dispatch(r, every_cmp_kernel, sig, out[r]);
  });
  EXPECT_EQ(out(0, 0), -3);
  EXPECT_EQ(out(1, 0), -3);
}

void never_kernel(DistributedTensor<std::int32_t> sig) {
  TaskGraph g(1, "stuck");
  auto w = g.add("await nothing", [&] { system::defer_wait(sig, {0, 3}, 1); });
  g.add("after", [] {}, {w});
  g.run();
}
void never_program(Host& h) {
  auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, never_kernel, sig);
}

TEST(Tasks, DeferredConditionsHaveTheWaitDeadline) {
  try {
    pld::run(ranks(2, 0.3), never_program);
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("defer_wait in task 'await nothing'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("signal 'sig' offsets [0, 3] >= 1 (the cell holds 0)"), std::string::npos)
        << e.what();
  }
}

enum class Misuse {
  Outside,
  BadCmp,
  Negative,
  TooManyConditions,
  TooManyDeferred,
  LaterDep,
  Threads,
  RunTwice,
  Throws
};

void misuse_kernel(DistributedTensor<std::int32_t> sig, Misuse m, Tensor<std::int32_t> ran) {
  TaskGraph g(1, "misuse");
  switch (m) {
    case Misuse::Outside: system::defer_wait(sig, {0, 0}, 1); break;
    case Misuse::BadCmp: g.add("w", [&] { system::defer_wait(sig, {0, 0}, 1, static_cast<WaitCmp>(9)); }); break;
    case Misuse::Negative: g.add("w", [&] { system::defer_wait(sig, {0, 0}, -1); }); break;
    case Misuse::TooManyConditions:
      g.add("w", [&] {
        for (int i = 0; i <= kMaxDeferConditions; ++i) system::defer_wait(sig, {0, 0}, 1);
      });
      break;
    case Misuse::TooManyDeferred:
      for (int i = 0; i <= kMaxDeferredTasks; ++i) g.add("w", [&] { system::defer_wait(sig, {0, 0}, 1); });
      break;
    case Misuse::LaterDep: g.add("x", [] {}, {TaskId{3}}); break;
    case Misuse::Threads: {
      TaskGraph bad(0);
      break;
    }
    case Misuse::RunTwice:
      g.add("x", [] {});
      g.run();
      break;
    case Misuse::Throws: {
      auto a = g.add("boom", [] { throw std::runtime_error("task failed on purpose"); });
      g.add("after", [&] { ran(0) = 1; }, {a});
      break;
    }
  }
  g.run();
}
void misuse_program(Host& h, Misuse m, HostTensor<std::int32_t>& ran) {
  auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
  h.dispatch(0, misuse_kernel, sig, m, ran[0]);
  h.dispatch(1, misuse_kernel, sig, m, ran[1]);
}

TEST(Tasks, EveryMisuseIsNamed) {
  const std::pair<Misuse, const char*> cases[] = {
      {Misuse::Outside, "must be called inside a task of a running TaskGraph"},
      {Misuse::BadCmp, "cmp 9 is not a WaitCmp; pass WaitCmp::Eq, Ne, Gt, Ge, Lt or Le"},
      {Misuse::Negative, "expected -1 is negative"},
      {Misuse::TooManyConditions, "kMaxDeferConditions = 64"},
      {Misuse::TooManyDeferred, "more than kMaxDeferredTasks = 64"},
      {Misuse::LaterDep, "dependency 3 is not a task added earlier"},
      {Misuse::Threads, "threads 0 must be in [1, 64]"},
      {Misuse::RunTwice, "the graph already ran"},
      {Misuse::Throws, "task failed on purpose"},
  };
  for (const auto& [m, needle] : cases) {
    auto ran = HostTensor<std::int32_t>::zeros({2, 1});
    try {  // both ranks fail the same way; either may be reported
      pld::run(ranks(2, 5), misuse_program, m, ran);
      ADD_FAILURE() << "expected a RankError containing " << needle;
    } catch (const RankError& e) {
      EXPECT_EQ(e.cause(), RankFailure::KernelError) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(ran(0, 0), 0) << "a dependant of a failed task must not run";
  }
}

}  // namespace
}  // namespace pld::test
