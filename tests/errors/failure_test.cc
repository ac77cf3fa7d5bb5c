// Rank failures: a kernel that throws, a rank that segfaults, aborts, exits or is SIGKILLed, a
// wait that passes its deadline, and a host that dies. Each time: the error names the rank and
// the cause, every other rank is released, no process survives, nothing is left in /dev/shm
// (main.cc checks the last two after every test).
#include "support.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace pld::test {
namespace {

enum Failure : int { kThrow, kThrowUsage, kSegfault, kAbort, kSigkillSelf, kExit };

// Rank 1 fails; every other rank waits on a cell nobody writes (released by the abort).
void fail_on_rank1(DistributedTensor<std::int32_t> sig, int how) {
  auto ctx = get_comm_ctx(sig);
  if (rank(ctx) != 1) {
    system::wait(sig, {rank(ctx)}, 1, WaitCmp::Ge);
    return;
  }
  switch (how) {
    case kThrow: throw std::runtime_error("boom from the kernel");
    case kThrowUsage: throw UsageError("my_op: bad value 42; use 7");
    case kSegfault: raise(SIGSEGV); break;
    case kAbort: std::abort();
    case kSigkillSelf: kill(getpid(), SIGKILL); break;
    case kExit: _exit(3);
  }
}

struct FailureCase {
  int how;
  int ranks;
  RankFailure cause;
  const char* needle;
};

class RankFailures : public ::testing::TestWithParam<FailureCase> {};

TEST_P(RankFailures, NameTheRankAndReleaseTheOthers) {
  const FailureCase c = GetParam();
  expect_rank_error(
      [&] {
        run(ranks(c.ranks, 600), [&](Host& h) {
          auto b = h.alloc_window_buffer({h.world_size()}, DType::INT32, "sig");
          for (int r = 0; r < h.world_size(); ++r)
            h.dispatch(r, fail_on_rank1, h.window<std::int32_t>(b, {h.world_size()}), c.how);
        });
      },
      1, c.cause, c.needle);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RankFailures,
    ::testing::Values(FailureCase{kThrow, 2, RankFailure::KernelError,
                                  "kernel threw std::runtime_error: boom from the kernel"},
                      FailureCase{kThrowUsage, 3, RankFailure::KernelError, "my_op: bad value 42; use 7"},
                      FailureCase{kSegfault, 4, RankFailure::Crashed, "killed by signal 11 (SIGSEGV)"},
                      FailureCase{kAbort, 2, RankFailure::Crashed, "killed by signal 6 (SIGABRT)"},
                      FailureCase{kSigkillSelf, 8, RankFailure::Crashed, "killed by signal 9 (SIGKILL)"},
                      FailureCase{kExit, 3, RankFailure::Exited, "exited with status 3"}),
    [](const auto& info) { return "case" + std::to_string(info.param.how) + "_P" + std::to_string(info.param.ranks); });

// Rank 1 publishes its pid; rank 0 SIGKILLs it from outside.
void killed_by_peer(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> pids) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx);
  pids(me) = getpid();
  if (me == 1) {
    system::notify(sig, 0, {0}, 1, NotifyOp::Set);
    system::wait(sig, {1}, 1, WaitCmp::Ge);  // never: rank 0 kills us
  } else {
    system::wait(sig, {0}, 1, WaitCmp::Ge);
    kill(pids(1), SIGKILL);
    system::wait(sig, {1}, 1, WaitCmp::Ge);  // released when the host sees rank 1 die
  }
}

TEST(RankFailures, SigkillFromOutside) {
  auto pids = HostTensor<std::int32_t>::zeros({2});
  expect_rank_error(
      [&] {
        run(ranks(2, 600), [&](Host& h) {
          auto b = h.alloc_window_buffer({2}, DType::INT32, "sig");
          for (int r = 0; r < 2; ++r) h.dispatch(r, killed_by_peer, h.window<std::int32_t>(b, {2}), pids.view());
        });
      },
      1, RankFailure::Crashed, "killed by signal 9 (SIGKILL)");
}

// Every rank waits on its own cell; nobody notifies.
void deadlock(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  system::wait(sig, {rank(ctx), 0}, 1, WaitCmp::Ge);
}

void expect_wait_report(const DistributedConfig& cfg) {
  try {
    run(cfg, [](Host& h) {
      auto b = h.alloc_window_buffer({h.world_size(), 1}, DType::INT32, "barrier_sig");
      for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, deadlock, h.window<std::int32_t>(b, {h.world_size(), 1}));
    });
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout) << msg;
    EXPECT_NE(msg.find("waited for value >= 1 but the cell holds 0 at the deadline"), std::string::npos) << msg;
    for (int r = 0; r < cfg.world_size(); ++r) {
      const std::string line = "rank " + std::to_string(r) + " (device " + std::to_string(cfg.device_ids[r]) +
                               "): waiting on signal 'barrier_sig' of domain world offsets [" + std::to_string(r) +
                               ", 0] for value >= 1; the cell holds 0";
      EXPECT_NE(msg.find(line), std::string::npos) << "missing: " << line << "\nin: " << msg;
    }
  }
}

TEST(WaitDeadline, ReportsEveryRanksWaitFromConfig) {
  expect_wait_report(ranks(3, 0.5));
}

TEST(WaitDeadline, ReportsEveryRanksWaitFromEnvironment) {
  setenv("PLD_WAIT_TIMEOUT", "0.3", 1);
  auto cfg = ranks(4, 0);
  expect_wait_report(cfg);
  unsetenv("PLD_WAIT_TIMEOUT");
}

TEST(RankFailures, NextRunAfterAFailureSucceeds) {
  EXPECT_THROW(run(ranks(2, 600),
                   [](Host& h) {
                     auto b = h.alloc_window_buffer({2}, DType::INT32, "sig");
                     for (int r = 0; r < 2; ++r) h.dispatch(r, fail_on_rank1, h.window<std::int32_t>(b, {2}), kThrow);
                   }),
               RankError);
  auto out = HostTensor<std::int32_t>::zeros({2, 1});
  run(ranks(2), [&](Host& h) {
    for (int r = 0; r < 2; ++r)
      h.dispatch(
          r, [](Tensor<std::int32_t> o, int v) { o(0) = v; }, out[r], 5 + r);
  });
  EXPECT_EQ(out(0, 0), 5);
  EXPECT_EQ(out(1, 0), 6);
}

bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string skip, state;
  stat >> skip >> skip >> state;
  return state == "Z" || state == "X";
}

// Ranks publish their pids, then wait forever; the test kills their host process.
void park(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> pids) {
  auto ctx = get_comm_ctx(sig);
  pids(rank(ctx)) = getpid();
  system::wait(sig, {rank(ctx)}, 1, WaitCmp::Ge);
}

TEST(HostDeath, RanksExitWhenTheHostDies) {
  constexpr int kRanks = 4;
  auto pids = HostTensor<std::int32_t>::zeros({kRanks});
  const pid_t host = fork();
  ASSERT_GE(host, 0);
  if (host == 0) {
    try {
      run(ranks(kRanks, 600), [&](Host& h) {
        auto b = h.alloc_window_buffer({kRanks}, DType::INT32, "sig");
        for (int r = 0; r < kRanks; ++r) h.dispatch(r, park, h.window<std::int32_t>(b, {kRanks}), pids.view());
      });
    } catch (...) {
    }
    _exit(0);
  }
  // Wait (bounded) until every rank has published its pid, then kill the host.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto all_published = [&] {
    for (int r = 0; r < kRanks; ++r)
      if (std::atomic_ref<std::int32_t>(pids(r)).load() == 0) return false;
    return true;
  };
  while (!all_published() && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(all_published());
  kill(host, SIGKILL);
  int status = 0;
  waitpid(host, &status, 0);
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = pids(r);
    while (!process_gone(pid) && std::chrono::steady_clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(process_gone(pid)) << "rank " << r << " (pid " << pid << ") outlived its host";
  }
}

}  // namespace
}  // namespace pld::test
