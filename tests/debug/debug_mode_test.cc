// Debug mode (PLD_DEBUG=1): collective mismatches, notifies on a collective's signal, reused
// signals and window views that overrun their buffer fail with a message naming the ranks, the
// cells and the cause — and correct programs still pass.
#include "support.hpp"

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pld::test {
namespace {

#define EXPECT_HAS(msg, needle) \
  EXPECT_NE((msg).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" << (msg)

class DebugMode : public ::testing::Test {
 protected:
  void SetUp() override { setenv("PLD_DEBUG", "1", 1); }
  void TearDown() override { unsetenv("PLD_DEBUG"); }
};

std::string rank_error(const DistributedConfig& cfg, const std::function<void(Host&)>& orch) {
  try {
    run(cfg, orch);
  } catch (const RankError& e) {
    EXPECT_EQ(e.cause(), RankFailure::KernelError) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a RankError";
  return {};
}

// kind 0: allreduce Sum; 1: broadcast root 0; 2: allreduce Max; 3: allreduce on the first half.
void one_collective(DistributedTensor<float> data, DistributedTensor<std::int32_t> sig, int odd_rank, int odd_kind) {
  const int me = rank(get_comm_ctx(data));
  const int kind = me == odd_rank ? odd_kind : 0;
  if (kind == 0) tensor::allreduce(data, sig);
  if (kind == 1) tensor::broadcast(data, sig, {.root = 0});
  if (kind == 2) tensor::allreduce(data, sig, {.op = ReduceOp::Max});
  if (kind == 3)
    tensor::allreduce(detail::Access::make<DistributedTensor<float>>(data.ref(), Dims{1, 32}, data.state()), sig);
}

std::string mismatch(int odd_rank, int odd_kind) {
  return rank_error(ranks(3, 5), [&](Host& h) {
    auto d = h.alloc_window_buffer({1, 64}, DType::FP32, "data");
    auto s = h.alloc_window_buffer({3, 1}, DType::INT32, "sig");
    for (int r = 0; r < 3; ++r)
      h.dispatch(r, one_collective, h.window<float>(d, {1, 64}), h.window<std::int32_t>(s, {3, 1}), odd_rank, odd_kind);
  });
}

TEST_F(DebugMode, AllreduceVersusBroadcast) {
  const std::string msg = mismatch(1, 1);
  EXPECT_HAS(
      msg,
      "collective mismatch on comm domain world (collective #0 of this call on signal 'sig'): rank 1 called broadcast "
      "but rank 0 called allreduce (they differ in collective)");
  EXPECT_HAS(msg, "rank 0: allreduce(target 'data' fp32 [1, 64], signal 'sig', op Sum, mode Auto, core_num 1)");
  EXPECT_HAS(msg,
             "rank 1: broadcast(target 'data' fp32 [1, 64], signal 'sig', root 0, core_num 1)   <- differs from "
             "rank 0 in collective");
  EXPECT_HAS(msg, "rank 2: allreduce(");
}

TEST_F(DebugMode, SumVersusMax) {
  const std::string msg = mismatch(2, 2);
  EXPECT_HAS(msg, "rank 2 called allreduce but rank 0 called allreduce (they differ in op)");
  EXPECT_HAS(msg,
             "rank 2: allreduce(target 'data' fp32 [1, 64], signal 'sig', op Max, mode Auto, core_num 1)   <- "
             "differs from rank 0 in op");
}

TEST_F(DebugMode, DifferentSizes) {
  const std::string msg = mismatch(1, 3);
  EXPECT_HAS(msg, "(they differ in size)");
  EXPECT_HAS(msg, "rank 1: allreduce(target 'data' fp32 [1, 32]");
}

// With debug mode on, correct collectives of every family still pass, back to back.
void many_collectives(DistributedTensor<float> data, DistributedTensor<float> rows, DistributedTensor<std::int32_t> sig,
                      Tensor<float> out) {
  const int me = rank(get_comm_ctx(data)), n = nranks(get_comm_ctx(data));
  for (int i = 0; i < 3; ++i) {
    tile::store(tile::full<float>({1, 16}, static_cast<float>(me + 1)), {0, 0}, data);
    tensor::allreduce(data, sig);
    tensor::barrier(sig);
  }
  tensor::broadcast(data, sig, {.root = n - 1});
  tensor::allgather(data, rows, sig);
  tensor::reduce_scatter(rows, sig);
  tile::store(tile::load(data, {0, 0}, {1, 16}), {0, 0}, out);
}

TEST_F(DebugMode, CorrectProgramsPass) {
  auto out = HostTensor<float>::zeros({4, 1, 16});
  run(ranks(4, 10), [&](Host& h) {
    auto d = h.alloc_window_buffer({1, 16}, DType::FP32, "data");
    auto rw = h.alloc_window_buffer({4, 16}, DType::FP32, "rows");
    auto s = h.alloc_window_buffer({4, 1}, DType::INT32, "sig");
    for (int r = 0; r < 4; ++r)
      h.dispatch(r, many_collectives, h.window<float>(d, {1, 16}), h.window<float>(rw, {4, 16}),
                 h.window<std::int32_t>(s, {4, 1}), out[r]);
    h.allreduce(h.window<float>(d, {1, 16}));  // a host builtin too
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out.data()[r * 16], 10.0f);  // 1+2+3+4, copied before the host allreduce
}

// A hand-written barrier reused with the same expected value: the second wait passes on the first
// round's notify. Rank 1 notifies once; rank 0 waits for >= 1 twice.
void reused_counter(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  if (rank(ctx) == 1) {
    system::notify(sig, 0, {1, 0}, 1, NotifyOp::AtomicAdd);
  } else {
    system::wait(sig, {1, 0}, 1, WaitCmp::Ge);
    system::wait(sig, {1, 0}, 1, WaitCmp::Ge);
  }
}

TEST_F(DebugMode, ReusedMonotonicSignal) {
  std::string msg;
  expect_rank_error(
      [] {
        run(ranks(2, 5), [](Host& h) {
          auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "bar");
          for (int r = 0; r < 2; ++r) h.dispatch(r, reused_counter, h.window<std::int32_t>(b, {2, 1}));
        });
      },
      0, RankFailure::KernelError,
      "wait(signal 'bar', offsets [1, 0]) on rank 0: signal reused while still in use — an earlier wait on this cell "
      "in "
      "this call already waited for >= 1");
  expect_rank_error(
      [] {
        run(ranks(2, 5), [](Host& h) {
          auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "bar");
          for (int r = 0; r < 2; ++r) h.dispatch(r, reused_counter, h.window<std::int32_t>(b, {2, 1}));
        });
      },
      0, RankFailure::KernelError, "Last notify of this cell: rank 1 notify(AtomicAdd 1, its operation #1)");
}

// The tutorial-style credit barrier that gives its credits back is not a reuse.
void generation_barrier(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  for (int g = 1; g <= 3; ++g) {
    for (int p = 0; p < n; ++p)
      if (p != me) system::notify(sig, p, {me, 0}, 1, NotifyOp::AtomicAdd);
    for (int s = 0; s < n; ++s)
      if (s != me) system::wait(sig, {s, 0}, g, WaitCmp::Ge);
  }
  for (int s = 0; s < n; ++s)
    if (s != me) system::notify(sig, me, {s, 0}, -3, NotifyOp::AtomicAdd);
}

TEST_F(DebugMode, GenerationCountersAreNotReuse) {
  run(ranks(3, 10), [](Host& h) {
    auto b = h.alloc_window_buffer({3, 1}, DType::INT32, "gen");
    for (int r = 0; r < 3; ++r) h.dispatch(r, generation_barrier, h.window<std::int32_t>(b, {3, 1}));
    for (int r = 0; r < 3; ++r) h.dispatch(r, generation_barrier, h.window<std::int32_t>(b, {3, 1}));
  });
}

// An atomic on a signal an allreduce uses in the same call fails like a notify.
void atomic_collective_signal(DistributedTensor<float> data, DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  tensor::allreduce(data, sig);
  if (rank(ctx) == 1) system::atomic_fetch_add(sig, 0, {1, 0}, 1);
}

TEST_F(DebugMode, AtomicOnACollectivesSignal) {
  expect_rank_error(
      [] {
        run(ranks(2, 5), [](Host& h) {
          auto d = h.alloc_window_buffer({1, 8}, DType::FP32, "data");
          auto s = h.alloc_window_buffer({2, 1}, DType::INT32, "sig");
          for (int r = 0; r < 2; ++r)
            h.dispatch(r, atomic_collective_signal, h.window<float>(d, {1, 8}), h.window<std::int32_t>(s, {2, 1}));
        });
      },
      1, RankFailure::KernelError,
      "atomic_fetch_add(window 'sig', offsets [1, 0]) to rank 0: signal 'sig' is the signal of allreduce");
}

// Atomics as signals: rank 1 raises rank 0's cell with atomic_add twice; between the two waits
// rank 0 resets it with atomic_set. The reset counts as one (no reuse failure), as a Set notify's.
void atomic_signals(DistributedTensor<std::int32_t> sig) {
  const int me = rank(get_comm_ctx(sig));
  if (me == 0) {
    system::wait(sig, {0, 0}, 1, WaitCmp::Ge);
    system::atomic_set(sig, 0, {0, 0}, 0);
    system::notify(sig, 1, {1, 0}, 1, NotifyOp::AtomicAdd);
    system::wait(sig, {0, 0}, 1, WaitCmp::Ge);
  } else if (me == 1) {
    system::atomic_add(sig, 0, {0, 0}, 1);
    system::wait(sig, {1, 0}, 1, WaitCmp::Ge);
    system::atomic_inc(sig, 0, {0, 0});
  }
}

TEST_F(DebugMode, AtomicsAsSignalsPass) {
  run(ranks(2, 10), [](Host& h) {
    auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "sig");
    for (int r = 0; r < 2; ++r) h.dispatch(r, atomic_signals, h.window<std::int32_t>(b, {2, 1}));
  });
}

// A kernel notify on a signal an allreduce uses in the same call.
void notify_collective_signal(DistributedTensor<float> data, DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  tensor::allreduce(data, sig);
  if (rank(ctx) == 1) system::notify(sig, 0, {1, 0}, 1, NotifyOp::AtomicAdd);
}

TEST_F(DebugMode, NotifyOnACollectivesSignal) {
  expect_rank_error(
      [] {
        run(ranks(2, 5), [](Host& h) {
          auto d = h.alloc_window_buffer({1, 8}, DType::FP32, "data");
          auto s = h.alloc_window_buffer({2, 1}, DType::INT32, "sig");
          for (int r = 0; r < 2; ++r)
            h.dispatch(r, notify_collective_signal, h.window<float>(d, {1, 8}), h.window<std::int32_t>(s, {2, 1}));
        });
      },
      1, RankFailure::KernelError,
      "notify(signal 'sig', offsets [1, 0]) to rank 0: signal 'sig' is the signal of allreduce(target 'data' fp32 [1, "
      "8], signal 'sig', op Sum, mode Auto, core_num 1) — collective #0 on it of comm domain world in this call");
}

// A view built inside the kernel that is larger than its buffer: without debug mode the remote
// load would read past the window; with it, the access fails first.
void oversized_view(DistributedTensor<float> data, Tensor<float> out) {
  auto ctx = get_comm_ctx(data);
  auto big = detail::Access::make<DistributedTensor<float>>(data.ref(), Dims{1, 64}, data.state());
  tile::store(tile::remote_load(big, 1 - rank(ctx), {0, 0}, {1, 8}), {0, 0}, out);
}

TEST_F(DebugMode, ViewLargerThanItsWindow) {
  auto out = HostTensor<float>::zeros({2, 1, 8});
  std::string msg;
  try {
    run(ranks(2, 5), [&](Host& h) {
      auto d = h.alloc_window_buffer({1, 8}, DType::FP32, "small");
      for (int r = 0; r < 2; ++r) h.dispatch(r, oversized_view, h.window<float>(d, {1, 8}), out[r]);
    });
  } catch (const RankError& e) {
    msg = e.what();
  }
  EXPECT_HAS(msg,
             "tile::remote_load: the view of window 'small' has shape [1, 64] (fp32, 256 bytes) but the buffer "
             "has 32 bytes");
}

// A worker keeps its ranks across calls: descriptors are compared per call (collective #k restarts
// at 0), a mismatch fails only its call, and the worker goes on.
void sum_or_max(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig, int odd_rank) {
  if (rank(get_comm_ctx(v)) == odd_rank)
    tensor::allreduce(v, sig, {.op = ReduceOp::Max});
  else
    tensor::allreduce(v, sig);
}
void sum_or_max_program(Host& h, int odd_rank) {
  auto v = h.window<float>(h.alloc_window_buffer({16}, DType::FP32, "v"), {16});
  auto s = h.window<std::int32_t>(h.alloc_window_buffer({3, 1}, DType::INT32, "sig"), {3, 1});
  for (int r = 0; r < 3; ++r) h.dispatch(r, sum_or_max, v, s, odd_rank);
}

TEST_F(DebugMode, WorkerComparesEachCallAndRecovers) {
  DistributedWorker w(ranks(3, 5), sum_or_max_program);
  for (int call = 0; call < 5; ++call) w(-1);
  try {
    w(1);
    ADD_FAILURE() << "expected a collective mismatch";
  } catch (const RankError& e) {
    EXPECT_HAS(std::string(e.what()),
               "collective mismatch on comm domain world (collective #0 of this call on signal 'sig'): "
               "rank 1 called allreduce but rank 0 called allreduce (they differ in op)");
  }
  for (int call = 0; call < 3; ++call) w(-1);
}

// A persistent window kept without reset keeps its signal values: a wait that the previous call's
// notify already satisfies passes at once. Debug mode says so in a warning.
void notify_then_wait(DistributedTensor<std::int32_t> sig, int send) {
  const int me = rank(get_comm_ctx(sig));
  if (me == 0 && send) system::notify(sig, 1, {0, 0}, 1, NotifyOp::AtomicAdd);
  if (me == 1) system::wait(sig, {0, 0}, 1, WaitCmp::Ge);
}
void stale_program(Host& h, int send) {
  auto s = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
  for (int r = 0; r < 2; ++r) h.dispatch(r, notify_then_wait, s, send);
}

TEST_F(DebugMode, WaitSatisfiedByAnEarlierCallWarns) {
  PLD_REQUIRE_SHM();
  const auto dir = std::filesystem::temp_directory_path() / ("pld-stale-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  setenv("PLD_LOG_FILE", (dir / "log.%r").c_str(), 1);
  auto log_of_rank1 = [&] {
    std::ifstream f(dir / "log.1");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  auto count = [](const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  {
    DistributedWorker w(ranks(2, 5), WorkerOptions{.persistent = true, .reset_persistent_windows = false},
                        stale_program);
    w(1);  // the notify of this call satisfies the wait: no warning
    EXPECT_EQ(count(log_of_rank1(), "stale signal"), 0u) << log_of_rank1();
    w(0);  // no notify: the wait passes on the value the first call wrote
  }
  unsetenv("PLD_LOG_FILE");
  const std::string log = log_of_rank1();
  EXPECT_EQ(count(log, "stale signal"), 1u) << log;
  EXPECT_HAS(log,
             "wait(signal 'sig', offsets [0, 0]) on rank 1: stale signal — the cell already holds 1 (wait for >= 1) "
             "from a notify of an earlier call");
  EXPECT_HAS(log, "reset_persistent_windows");
  EXPECT_HAS(log, "use a fresh signal");
  std::filesystem::remove_all(dir);
}

// A wait that lasts past PLD_WAIT_NOTE prints a one-line note naming the rank, the cell and the
// deadline, long before the deadline (here: a note at 1 s of a wait with a 4 s deadline).
void wait_for_nobody(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  system::wait(sig, {rank(ctx), 0}, 1, WaitCmp::Ge);
}

TEST(WaitNote, ALongWaitPrintsStillWaitingBeforeTheDeadline) {
  PLD_REQUIRE_RANKS(2);
  setenv("PLD_WAIT_NOTE", "1", 1);
  testing::internal::CaptureStderr();
  bool timed_out = false;
  try {
    run(ranks(2, 4), [](Host& h) {
      auto b = h.alloc_window_buffer({2, 1}, DType::INT32, "quiet");
      for (int r = 0; r < 2; ++r) h.dispatch(r, wait_for_nobody, h.window<std::int32_t>(b, {2, 1}));
    });
  } catch (const RankError& e) {
    timed_out = e.cause() == RankFailure::WaitTimeout;
  }
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("PLD_WAIT_NOTE");
  EXPECT_TRUE(timed_out);
  EXPECT_HAS(err, "still waiting after 1 s");
  EXPECT_HAS(err, "'quiet'");
  EXPECT_HAS(err, "(the deadline is at 4 s: PLD_WAIT_TIMEOUT");
}

}  // namespace
}  // namespace pld::test
