// Persistent windows (kept, reset or not, spec changes rejected), host callbacks between
// dispatches, and DistributedWorker::benchmark.
#include "support.hpp"

#include <signal.h>
#include <unistd.h>

namespace pld::test {
namespace {

// Every rank increments its own cell of window `name` and reports the new value.
void count_kernel(DistributedTensor<std::int32_t> w, Tensor<std::int32_t> out) {
  auto t = tile::remote_load(w, rank(get_comm_ctx(w)), {0, 0}, {1, 1});
  out(0) = t(0, 0) + 1;
  t(0, 0) = out(0);
  tile::remote_store(t, w, rank(get_comm_ctx(w)), {0, 0});
}
void counter(Host& h, HostTensor<std::int32_t>& out) {
  auto w = h.window<std::int32_t>(h.alloc_window_buffer({1, 16}, DType::INT32, "count"), {1, 16});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, count_kernel, w, out[r]);
}
void other_counter(Host& h, HostTensor<std::int32_t>& out) {
  counter(h, out);
}

std::vector<std::int32_t> counts(auto& rt, auto program, int calls) {
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  std::vector<std::int32_t> seen;
  for (int i = 0; i < calls; ++i) {
    rt.run(program, out);
    EXPECT_EQ(out(0, 0), out(1, 0));
    seen.push_back(out(0, 0));
  }
  return seen;
}

TEST(Persistent, KeptAcrossCallsWithoutReset) {
  DistributedWorker rt(ranks(2), WorkerOptions{.persistent = true, .reset_persistent_windows = false}, counter,
                       other_counter);
  EXPECT_EQ(counts(rt, counter, 4), (std::vector<std::int32_t>{1, 2, 3, 4}));
  // Another program's buffer of the same name is its own.
  EXPECT_EQ(counts(rt, other_counter, 2), (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(counts(rt, counter, 1), (std::vector<std::int32_t>{5}));
}

TEST(Persistent, ResetByDefaultAndFreshWithoutPersistent) {
  DistributedWorker reset(ranks(2), WorkerOptions{.persistent = true}, counter);
  EXPECT_EQ(counts(reset, counter, 3), (std::vector<std::int32_t>{1, 1, 1}));
  DistributedWorker fresh(ranks(2), counter);
  EXPECT_EQ(counts(fresh, counter, 3), (std::vector<std::int32_t>{1, 1, 1}));
  expect_usage_error([] { DistributedWorker rt(ranks(2), WorkerOptions{.reset_persistent_windows = true}, counter); },
                     "requires persistent = true");
}

void sized(Host& h, HostTensor<std::int32_t>& out, std::int64_t n, bool extra, bool count) {
  if (count) counter(h, out);
  auto b = h.alloc_window_buffer(static_cast<std::uint64_t>(n), "data");
  (void)b;
  if (extra) (void)h.alloc_window_buffer(64, "extra");
}

TEST(Persistent, ChangedSpecificationIsAnError) {
  DistributedWorker rt(ranks(2), WorkerOptions{.persistent = true}, sized);
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  rt.run(sized, out, 256, false, true);
  expect_usage_error([&] { rt.run(sized, out, 512, false, true); }, "changed specification");
  expect_usage_error([&] { rt.run(sized, out, 256, true, true); }, "had no buffer 'extra'");
  expect_usage_error([&] { rt.run(sized, out, 256, false, false); }, "this call did not allocate it");
  rt.run(sized, out, 256, false, true);  // the original specification still works
}

void stage_kernel(DistributedTensor<float> v, Tensor<float> in) {
  tensor::put(v, rank(get_comm_ctx(v)), in);
}
void read_kernel(DistributedTensor<float> v, Tensor<float> out) {
  tensor::get(out, rank(get_comm_ctx(v)), v);
}
// Host builtin allreduce on pld's own signal, in a loop, in every call of a non-reset worker.
void builtin_loop(Host& h, HostTensor<float>& in, HostTensor<float>& out) {
  auto v = h.window<float>(h.alloc_window_buffer({4}, DType::FP32, "v"), {4});
  for (int k = 0; k < 3; ++k) {
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, stage_kernel, v, in[r]);
    h.allreduce(v);
  }
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, read_kernel, v, out[r]);
}

TEST(Persistent, SelfClearingSignalsNeedNoReset) {
  DistributedWorker rt(ranks(3), WorkerOptions{.persistent = true, .reset_persistent_windows = false}, builtin_loop);
  auto out = HostTensor<float>::zeros({3, 4});
  auto in = HostTensor<float>::zeros({3, 4});
  for (int r = 0; r < 3; ++r)
    for (Index i = 0; i < 4; ++i) in(r, i) = static_cast<float>(r + 1);
  for (int call = 0; call < 4; ++call) {
    rt.run(builtin_loop, in, out);
    for (int r = 0; r < 3; ++r) ASSERT_EQ(out(r, 3), 6.0f) << call;
  }
}

void die_kernel(Tensor<std::int32_t> flag) {
  if (flag(0)) kill(getpid(), SIGKILL);
}
void counter_or_die(Host& h, HostTensor<std::int32_t>& out, HostTensor<std::int32_t>& flags) {
  counter(h, out);
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, die_kernel, flags[r]);
}

TEST(Persistent, RecoveryClearsPersistentWindows) {
  DistributedWorker rt(ranks(2), WorkerOptions{.persistent = true, .reset_persistent_windows = false}, counter_or_die);
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  auto flags = HostTensor<std::int32_t>::zeros({2, 1});
  rt.run(counter_or_die, out, flags);
  rt.run(counter_or_die, out, flags);
  EXPECT_EQ(out(1, 0), 2);
  flags(1, 0) = 1;
  expect_rank_error([&] { rt.run(counter_or_die, out, flags); }, 1, RankFailure::Crashed, "SIGKILL");
  flags(1, 0) = 0;
  rt.run(counter_or_die, out, flags);
  EXPECT_EQ(out(0, 0), 1) << "a lost rank may have left any window half-written: everything starts over";
}

// ----- Host callbacks ------------------------------------------------------------------------

void write_rank(Tensor<float> x, int r) {
  x(0) = static_cast<float>(r + 1);
}
void scale_by(Tensor<float> x, Tensor<float> total) {
  x(0) *= total(0);
}

// Ranks write x[r]; the host sums them into total; the ranks then scale by total.
void with_callback(Host& h, HostTensor<float>& x, HostTensor<float>& total, int& calls) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, write_rank, x[r], r);
  h.callback(
      [&calls](Tensor<float> xs, Tensor<float> t) {
        t(0) = 0;
        for (Index r = 0; r < xs.shape()[0]; ++r) t(0) += xs(r, 0);
        ++calls;
      },
      x.view(), total.view());
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, scale_by, x[r], total.view());
}

TEST(Callbacks, RunBetweenDispatchesInOrder) {
  auto x = HostTensor<float>::zeros({4, 1});
  auto total = HostTensor<float>::zeros({1});
  int calls = 0;
  pld::run(ranks(4), with_callback, x, total, calls);  // one-shot execution supports them too
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(total(0), 10.0f);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(x(r, 0), static_cast<float>(10 * (r + 1)));

  DistributedWorker rt(ranks(3), with_callback);
  x = HostTensor<float>::zeros({3, 1});
  for (int k = 0; k < 3; ++k) rt(x, total, calls);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(x(2, 0), 18.0f);
}

void failing_callback(Host& h, HostTensor<float>& x) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, write_rank, x[r], r);
  h.callback([] { throw std::runtime_error("callback failed on purpose"); });
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, write_rank, x[r], 100);
}

TEST(Callbacks, AFailureFailsTheCallAndSkipsWhatFollows) {
  DistributedWorker rt(ranks(2), failing_callback, with_callback);
  auto x = HostTensor<float>::zeros({2, 1});
  try {
    rt.run(failing_callback, x);
    FAIL() << "expected the callback's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "callback failed on purpose");
  }
  EXPECT_EQ(x(1, 0), 2.0f) << "dispatches after the failed callback must not run";
  auto total = HostTensor<float>::zeros({1});
  int calls = 0;
  rt.run(with_callback, x, total, calls);  // the worker is fine
  EXPECT_EQ(total(0), 3.0f);
}

DistributedWorker<void (*)(Host&, HostTensor<float>&)>* g_worker = nullptr;
void reentrant(Host& h, HostTensor<float>& x) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, write_rank, x[r], r);
  h.callback([] { (void)g_worker->alloc_tensor<float>({1}, 0); });
}

TEST(Callbacks, MayNotWaitForTheWorker) {
  DistributedWorker rt(ranks(2), reentrant);
  g_worker = &rt;
  auto x = HostTensor<float>::zeros({2, 1});
  expect_usage_error([&] { rt.run(reentrant, x); }, "called from a host callback");
  expect_usage_error([&] { rt.submit(reentrant, x).result(); }, "called from a host callback");
  g_worker = nullptr;
}

// ----- benchmark -------------------------------------------------------------------------------

void spin_kernel(Tensor<float> x) {
  for (int i = 0; i < 1000; ++i) x(0) += 1.0f;
}
void spin_program(Host& h, HostTensor<float>& x) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, spin_kernel, x[r]);
}

TEST(Benchmark, StatisticsAreConsistent) {
  DistributedWorker rt(ranks(2), spin_program);
  auto x = HostTensor<float>::zeros({2, 1});
  const BenchmarkStats s = rt.benchmark(7, 2, spin_program, x);
  EXPECT_EQ(s.rounds, 7);
  EXPECT_EQ(s.warmup, 2);
  EXPECT_EQ(x(1, 0), 9000.0f) << "warm-up and timed rounds all ran";
  for (const auto* st : {&s.total, &s.host, &s.ranks, &s.kernels}) {
    EXPECT_LE(st->min, st->median);
    EXPECT_LE(st->median, st->max);
    EXPECT_LE(st->min, st->mean);
    EXPECT_LE(st->mean, st->max);
  }
  // Nested intervals: kernels run inside the rank part, which runs inside the total.
  EXPECT_GT(s.kernels.min, 0.0);
  EXPECT_LE(s.kernels.median, s.ranks.median);
  EXPECT_LE(s.ranks.median, s.total.median);
  EXPECT_LE(s.host.median, s.total.median);
  expect_usage_error([&] { (void)rt.benchmark(0, 0, spin_program, x); }, "rounds 0 must be >= 1");
}

}  // namespace
}  // namespace pld::test
