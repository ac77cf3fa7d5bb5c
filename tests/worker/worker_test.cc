// DistributedWorker: ranks forked once and kept across calls; run / operator() / submit with two
// calls in flight; errors cached per handle; close(); host tensors created after the fork; and
// recovery from a lost rank.
#include "support.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

namespace pld::test {
namespace {

void record_pid(Tensor<std::int32_t> pids) {
  pids(0) = getpid();
}

void sum_kernel(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig, Tensor<float> in, Tensor<float> out) {
  const int me = rank(get_comm_ctx(v));
  tensor::put(v, me, in);
  tensor::allreduce(v, sig);
  tensor::get(out, me, v);
}

// Program: allreduce of in[r] into out[r], and every rank's pid into pids[r].
void sum_program(Host& h, HostTensor<float>& in, HostTensor<float>& out, HostTensor<std::int32_t>& pids) {
  const Index n = in.shape()[1];
  auto v = h.window<float>(h.alloc_window_buffer({n}, DType::FP32, "v"), {n});
  auto s =
      h.window<std::int32_t>(h.alloc_window_buffer({h.world_size(), 16}, DType::INT32, "sig"), {h.world_size(), 16});
  for (int r = 0; r < h.world_size(); ++r) {
    h.dispatch(r, sum_kernel, v, s, in[r], out[r]);
    h.dispatch(r, record_pid, pids[r]);
  }
}

void scale_kernel(Tensor<float> x, float f) {
  for (auto& e : x.span()) e *= f;
}
void scale_program(Host& h, HostTensor<float>& x, float f) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, scale_kernel, x[r], f);
}

void crash_kernel(Tensor<std::int32_t> flag) {
  if (flag(0) == 1) kill(getpid(), SIGKILL);
  if (flag(0) == 2) throw std::runtime_error("kernel failed on purpose");
}
void crash_program(Host& h, HostTensor<std::int32_t>& flags) {
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, crash_kernel, flags[r]);
}

TEST(Worker, ForksOnceAndRunsManyCalls) {
  constexpr int kRanks = 3;
  constexpr Index kLen = 1000;
  DistributedWorker rt(ranks(kRanks), sum_program);
  EXPECT_EQ(rt.world_size(), kRanks);
  auto pids = HostTensor<std::int32_t>::zeros({kRanks, 1});
  std::vector<std::int32_t> first;
  for (int call = 0; call < 50; ++call) {
    // New host tensors every call, created after the ranks were forked.
    auto in = HostTensor<float>::zeros({kRanks, kLen});
    for (int r = 0; r < kRanks; ++r)
      for (Index i = 0; i < kLen; ++i) in(r, i) = static_cast<float>(r + i + call);
    auto out = HostTensor<float>::zeros({kRanks, kLen});
    rt(in, out, pids);
    for (int r = 0; r < kRanks; ++r)
      for (Index i = 0; i < kLen; i += 111) ASSERT_EQ(out(r, i), static_cast<float>(3 * (i + call) + 3)) << call;
    std::vector<std::int32_t> now(pids.begin(), pids.end());
    if (call == 0) first = now;
    ASSERT_EQ(now, first) << "rank processes must be kept across calls";
  }
}

TEST(Worker, SeveralProgramsAndUnregisteredOnes) {
  DistributedWorker rt(ranks(2), sum_program, scale_program);
  auto x = HostTensor<float>::full({2, 4}, 1.0f);
  rt.run(scale_program, x, 3.0f);
  rt.run(scale_program, x, 2.0f);
  EXPECT_EQ(x(1, 3), 6.0f);
  auto flags = HostTensor<std::int32_t>::zeros({2, 1});
  expect_usage_error([&] { rt.run(crash_program, flags); }, "was not registered");
}

TEST(Worker, SubmitTwoInFlightAndHandles) {
  DistributedWorker rt(ranks(2), scale_program);
  std::vector<HostTensor<float>> xs;
  for (int i = 0; i < 6; ++i) xs.push_back(HostTensor<float>::full({2, 1000}, 1.0f));
  std::vector<RunHandle> handles;
  for (int i = 0; i < 6; ++i) handles.push_back(rt.submit(scale_program, xs[static_cast<std::size_t>(i)], 2.0f + i));
  for (int i = 0; i < 6; ++i) {
    handles[static_cast<std::size_t>(i)].result();
    EXPECT_TRUE(handles[static_cast<std::size_t>(i)].done());
    EXPECT_EQ(xs[static_cast<std::size_t>(i)](1, 999), 2.0f + i);
  }
  EXPECT_TRUE(handles[0].wait(0));
  expect_usage_error([&] { handles[0].wait(-1); }, "timeout -1 must be non-negative");
}

TEST(Worker, ErrorsAreCachedPerHandleAndTheWorkerGoesOn) {
  DistributedWorker rt(ranks(2), crash_program);
  auto flags = HostTensor<std::int32_t>::zeros({2, 1});
  flags(1, 0) = 2;
  auto h = rt.submit(crash_program, flags);
  for (int k = 0; k < 2; ++k) {  // every waiter sees the same error
    try {
      h.result();
      FAIL() << "expected a RankError";
    } catch (const RankError& e) {
      EXPECT_EQ(e.rank(), 1);
      EXPECT_EQ(e.cause(), RankFailure::KernelError);
      EXPECT_NE(std::string(e.what()).find("kernel failed on purpose"), std::string::npos);
    }
  }
  // wait() of a failed call rethrows the same error instead of reporting "finished".
  EXPECT_TRUE(h.done());
  for (double timeout : {0.0, std::numeric_limits<double>::infinity()})
    expect_rank_error([&] { h.wait(timeout); }, 1, RankFailure::KernelError, "kernel failed on purpose");
  flags(1, 0) = 0;
  rt(flags);  // the worker is still fine
}

TEST(Worker, RecoveryReplacesALostRank) {
  DistributedWorker rt(ranks(3), crash_program, sum_program);
  auto pids = HostTensor<std::int32_t>::zeros({3, 1});
  auto in = HostTensor<float>::full({3, 8}, 1.0f);
  auto out = HostTensor<float>::zeros({3, 8});
  rt.run(sum_program, in, out, pids);
  const std::int32_t before = pids(1, 0);
  auto flags = HostTensor<std::int32_t>::zeros({3, 1});
  flags(1, 0) = 1;  // rank 1 SIGKILLs itself
  expect_rank_error([&] { rt.run(crash_program, flags); }, 1, RankFailure::Crashed, "killed by signal 9 (SIGKILL)");
  rt.run(sum_program, in, out, pids);  // runs on a replacement process
  EXPECT_EQ(out(2, 7), 3.0f);
  EXPECT_NE(pids(1, 0), before);
}

TEST(Worker, WithoutRecoveryALostRankBreaksTheWorker) {
  DistributedWorker rt(ranks(2), WorkerOptions{.recovery = false}, crash_program);
  auto flags = HostTensor<std::int32_t>::zeros({2, 1});
  flags(0, 0) = 1;
  expect_rank_error([&] { rt(flags); }, 0, RankFailure::Crashed, "SIGKILL");
  flags(0, 0) = 0;
  try {
    rt(flags);
    FAIL() << "expected the worker to be broken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the worker is broken"), std::string::npos) << e.what();
  }
}

TEST(Worker, CloseDrainsIsIdempotentAndThreadSafe) {
  DistributedWorker rt(ranks(2), scale_program);
  auto a = HostTensor<float>::full({2, 100000}, 1.0f);
  auto b = HostTensor<float>::full({2, 100000}, 1.0f);
  auto ha = rt.submit(scale_program, a, 5.0f);
  auto hb = rt.submit(scale_program, b, 7.0f);
  std::thread t([&] { rt.close(); });
  rt.close();
  t.join();
  EXPECT_TRUE(ha.done());
  EXPECT_TRUE(hb.done());
  EXPECT_EQ(a(1, 99999), 5.0f);
  EXPECT_EQ(b(0, 0), 7.0f);
  expect_usage_error([&] { rt.run(scale_program, a, 1.0f); }, "called after close()");
}

TEST(Worker, BadOptions) {
  expect_usage_error([] { DistributedWorker rt(ranks(2), WorkerOptions{.startup_timeout = -1}, scale_program); },
                     "startup_timeout -1 must be positive and finite");
  expect_usage_error(
      [] { DistributedWorker rt(ranks(2), WorkerOptions{.startup_timeout = std::nan("")}, scale_program); },
      "startup_timeout");
  expect_usage_error(
      [] {
        DistributedWorker rt(DistributedConfig{.device_ids = {1, 1}}, scale_program);
      },
      "appears twice");
}

void deadlock_kernel(DistributedTensor<std::int32_t> sig) {
  system::wait(sig, {0}, 1, WaitCmp::Ge);
}
void deadlock_program(Host& h) {
  auto s = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "never"), {1});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, deadlock_kernel, s);
}

TEST(Worker, WaitDeadlineFailsTheCallOnly) {
  DistributedWorker rt(ranks(2, 0.3), deadlock_program, scale_program);
  try {  // both ranks wait on the same cell; either may reach its deadline first
    rt.run(deadlock_program);
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    EXPECT_NE(std::string(e.what()).find("signal 'never'"), std::string::npos) << e.what();
  }
  auto x = HostTensor<float>::full({2, 4}, 1.0f);
  rt.run(scale_program, x, 4.0f);
  EXPECT_EQ(x(0, 0), 4.0f);
}

}  // namespace
}  // namespace pld::test
