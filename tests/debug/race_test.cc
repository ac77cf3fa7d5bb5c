// The race detector (DistributedConfig::race_check, PLD_DEBUG=race): every planted race of the
// model's failure patterns is reported with both operations, the window and the missing edge; the
// correct form of each program passes. Which of the two ranks reports a race depends on which
// access comes second, so the checks look for what both reports say.
#include "support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace pld::test {
namespace {

#define EXPECT_HAS(msg, needle) \
  EXPECT_NE((msg).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" << (msg)

constexpr Index N = 64;

// Under mpirun (the mpi backend on one node) the launcher fixes the rank count: other counts skip.
#define NEED_RANKS(p) \
  if (!runs_here(p)) GTEST_SKIP() << "needs " << (p) << " ranks"

DistributedConfig race_config(int p, RaceCheck check = RaceCheck::Fail) {
  DistributedConfig c = ranks(p, 30);
  c.race_check = check;
  return c;
}

// The message of the RankError a run must fail with ("" and a test failure when it passes).
std::string race_error(int p, const std::function<void(Host&)>& orch) {
  try {
    run(race_config(p), orch);
  } catch (const RankError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected the race detector to fail the run";
  return {};
}

using Window = DistributedTensor<float>;
using Signal = DistributedTensor<std::int32_t>;

// Producer rank 0 stores into its window and notifies rank 1, which reads the window with
// remote_load. `order`: 0 correct (wait, then read), 1 read before the wait, 2 notify before the store.
void produce_consume(Window data, Signal sig, int order) {
  const int me = rank(get_comm_ctx(data));
  if (me == 0) {
    if (order == 2) system::notify(sig, 1, {0}, 1, NotifyOp::AtomicAdd);
    tile::store(tile::full<float>({1, N}, 7.0f), {0, 0}, data);
    if (order != 2) system::notify(sig, 1, {0}, 1, NotifyOp::AtomicAdd);
  } else if (me == 1) {
    if (order == 1) (void)tile::remote_load(data, 0, {0, 0}, {1, N});
    system::wait(sig, {0}, 1, WaitCmp::Ge);
    (void)tile::remote_load(data, 0, {0, 0}, {1, N});
  }
}

void run_produce_consume(Host& h, int order) {
  auto d = h.alloc_window_buffer({1, N}, DType::FP32, "data");
  auto s = h.alloc_window_buffer({1}, DType::INT32, "sig");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, produce_consume, h.window<float>(d, {1, N}), h.window<std::int32_t>(s, {1}), order);
}

TEST(Race, WaitThenReadPasses) {
  NEED_RANKS(2);
  run(race_config(2), [](Host& h) { run_produce_consume(h, 0); });
}

TEST(Race, RemoteLoadBeforeTheWait) {
  NEED_RANKS(2);
  const std::string msg = race_error(2, [](Host& h) { run_produce_consume(h, 1); });
  EXPECT_HAS(msg, "data race on window 'data' bytes [0, 256) of rank 0");
  EXPECT_HAS(msg, "tile::remote_load");
  EXPECT_HAS(msg, "tile::store");
  EXPECT_HAS(msg, "(kernel pld::test::(anonymous namespace)::produce_consume");
  EXPECT_HAS(msg, "fix: rank ");
}

TEST(Race, NotifyBeforeTheStore) {
  NEED_RANKS(2);
  const std::string msg = race_error(2, [](Host& h) { run_produce_consume(h, 2); });
  EXPECT_HAS(msg, "data race on window 'data' bytes [0, 256) of rank 0");
  EXPECT_HAS(msg, "no wait of rank ");
}

// Two rounds through one buffer of rank 1: rank 0 puts, notifies; rank 1 waits, reads and returns
// a credit, which rank 0 waits for before round two. `early`: the credit goes back before the read
// (the buffer is reused while rank 1 may still be reading it). `fused`: the data and its signal
// travel as one put_signal.
void reuse(Window data, Signal sig, Tensor<float> src, int early, bool fused) {
  const int me = rank(get_comm_ctx(data));
  for (int round = 1; round <= 2; ++round) {
    if (me == 0) {
      if (round == 2) system::wait(sig, {1}, 1, WaitCmp::Ge);
      if (fused) {
        tensor::put_signal(data, 1, src, sig, {0}, 1, NotifyOp::AtomicAdd);
      } else {
        tensor::put(data, 1, src);
        system::notify(sig, 1, {0}, 1, NotifyOp::AtomicAdd);
      }
    } else if (me == 1) {
      system::wait(sig, {0}, round, WaitCmp::Ge);
      if (round == 1 && early) system::notify(sig, 0, {1}, 1, NotifyOp::AtomicAdd);
      (void)tile::load(data, {0, 0}, {1, N});
      if (round == 1 && !early) system::notify(sig, 0, {1}, 1, NotifyOp::AtomicAdd);
    }
  }
}

void run_reuse(Host& h, HostTensor<float>& src, int early, bool fused = false) {
  auto d = h.alloc_window_buffer({1, N}, DType::FP32, "inbox");
  auto s = h.alloc_window_buffer({2}, DType::INT32, "sig");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, reuse, h.window<float>(d, {1, N}), h.window<std::int32_t>(s, {2}), src[r], early, fused);
}

TEST(Race, BufferReusedAfterTheCreditPasses) {
  NEED_RANKS(2);
  auto src = HostTensor<float>::zeros({2, 1, N});
  run(race_config(2), [&](Host& h) { run_reuse(h, src, 0); });
}

TEST(Race, CreditReturnedBeforeTheRead) {
  NEED_RANKS(2);
  auto src = HostTensor<float>::zeros({2, 1, N});
  const std::string msg = race_error(2, [&](Host& h) { run_reuse(h, src, 1); });
  EXPECT_HAS(msg, "data race on window 'inbox' bytes [0, 256) of rank 1");
  EXPECT_HAS(msg, "tensor::put");
  EXPECT_HAS(msg, "tile::load");
}

TEST(Race, PutSignalIntoABufferAfterTheCreditPasses) {
  NEED_RANKS(2);
  auto src = HostTensor<float>::zeros({2, 1, N});
  run(race_config(2), [&](Host& h) { run_reuse(h, src, 0, true); });
}

TEST(Race, PutSignalBeforeTheCreditCameBack) {
  NEED_RANKS(2);
  auto src = HostTensor<float>::zeros({2, 1, N});
  const std::string msg = race_error(2, [&](Host& h) { run_reuse(h, src, 1, true); });
  EXPECT_HAS(msg, "data race on window 'inbox' bytes [0, 256) of rank 1");
  EXPECT_HAS(msg, "tensor::put_signal");
  EXPECT_HAS(msg, "tile::load");
}

// Ranks 1 and 2 put into their own slot of rank 0's window and signal one cell; rank 0 waits
// and reads both slots. Set on a cell of several writers orders only the last Set's writer.
void gather_slots(Window data, Signal sig, Tensor<float> src, NotifyOp op) {
  const int me = rank(get_comm_ctx(data));
  if (me != 0) {
    tensor::put(data, 0, src, {me, 0}, {0, 0}, {1, N});
    system::notify(sig, 0, {0}, 1, op);
  } else {
    system::wait(sig, {0}, op == NotifyOp::Set ? 1 : 2, WaitCmp::Ge);
    (void)tile::load(data, {1, 0}, {2, N});
  }
}

void run_gather(Host& h, HostTensor<float>& src, NotifyOp op) {
  auto d = h.alloc_window_buffer({3, N}, DType::FP32, "slots");
  auto s = h.alloc_window_buffer({1}, DType::INT32, "sig");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, gather_slots, h.window<float>(d, {3, N}), h.window<std::int32_t>(s, {1}), src[r], op);
}

TEST(Race, AtomicAddOnAManyWriterCellPasses) {
  NEED_RANKS(3);
  auto src = HostTensor<float>::zeros({3, 1, N});
  run(race_config(3), [&](Host& h) { run_gather(h, src, NotifyOp::AtomicAdd); });
}

TEST(Race, SetWhereAtomicAddWasMeant) {
  NEED_RANKS(3);
  auto src = HostTensor<float>::zeros({3, 1, N});
  const std::string msg = race_error(3, [&](Host& h) { run_gather(h, src, NotifyOp::Set); });
  EXPECT_HAS(msg, "data race on window 'slots' bytes [");
  EXPECT_HAS(msg, "tensor::put");
  EXPECT_HAS(msg, "tile::load");
}

// A hand-rolled barrier on one monotonic cell, used twice: the second wait (>= 1) is already
// satisfied by the first round, so rank 1 reads rank 0's data before rank 0 has published it.
// Rank 0 waits for rank 1's read (on a second cell) before its second notify, so the early pass
// happens in every run; `generation` waits for 2 in the second round instead (the fix).
void two_barriers(Window data, Signal sig, int generation) {
  const int me = rank(get_comm_ctx(data));
  const int peer = 1 - me;
  system::notify(sig, peer, {0}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {0}, 1, WaitCmp::Ge);
  if (me == 0) {
    tile::store(tile::full<float>({1, N}, 1.0f), {0, 0}, data);
    if (!generation) system::wait(sig, {1}, 1, WaitCmp::Ge);
    system::notify(sig, peer, {0}, 1, NotifyOp::AtomicAdd);
  } else {
    system::wait(sig, {0}, generation ? 2 : 1, WaitCmp::Ge);
    (void)tile::remote_load(data, 0, {0, 0}, {1, N});
    if (!generation) system::notify(sig, 0, {1}, 1, NotifyOp::AtomicAdd);
  }
}

void run_two_barriers(Host& h, int generation) {
  auto d = h.alloc_window_buffer({1, N}, DType::FP32, "data");
  auto s = h.alloc_window_buffer({2}, DType::INT32, "sig");
  for (int r = 0; r < 2; ++r)
    h.dispatch(r, two_barriers, h.window<float>(d, {1, N}), h.window<std::int32_t>(s, {2}), generation);
}

TEST(Race, MonotonicBarrierWithGenerationsPasses) {
  NEED_RANKS(2);
  run(race_config(2), [](Host& h) { run_two_barriers(h, 1); });
}

TEST(Race, MonotonicSignalReused) {
  NEED_RANKS(2);
  const std::string msg = race_error(2, [](Host& h) { run_two_barriers(h, 0); });
  EXPECT_HAS(msg, "data race on window 'data' bytes [0, 256) of rank 0");
  EXPECT_HAS(msg, "tile::remote_load");
  EXPECT_HAS(msg, "tile::store");
}

// A ring exchange: every rank stores its block, notifies a neighbour, waits for a notify and
// gets the block of the rank whose notify it waited for (correct) or of the other neighbour.
void ring(Window data, Signal sig, int wrong) {
  auto ctx = get_comm_ctx(data);
  const int me = rank(ctx), n = nranks(ctx);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  tile::store(tile::full<float>({1, N}, static_cast<float>(me)), {0, 0}, data);
  system::notify(sig, next, {0}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {0}, 1, WaitCmp::Ge);
  (void)tile::remote_load(data, wrong ? next : prev, {0, 0}, {1, N});
}

void run_ring(Host& h, int wrong) {
  auto d = h.alloc_window_buffer({1, N}, DType::FP32, "block");
  auto s = h.alloc_window_buffer({1}, DType::INT32, "sig");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, ring, h.window<float>(d, {1, N}), h.window<std::int32_t>(s, {1}), wrong);
}

TEST(Race, RingHandshakePasses) {
  NEED_RANKS(3);
  run(race_config(3), [](Host& h) { run_ring(h, 0); });
}

TEST(Race, HandshakeWithTheWrongRank) {
  NEED_RANKS(3);
  const std::string msg = race_error(3, [](Host& h) { run_ring(h, 1); });
  EXPECT_HAS(msg, "data race on window 'block' bytes [0, 256) of rank ");
  EXPECT_HAS(msg, "tile::remote_load");
}

// Rank 0 publishes block 0 (store, notify) and then fills block 1 for a later phase; rank 1 waits
// and reads the block at `block`: block 0 is right, block 1 the wrong offsets (PyPTO's "silent data
// corruption": in bounds, so only the missing order shows it).
void two_blocks(Window data, Signal sig, int block) {
  const int me = rank(get_comm_ctx(data));
  if (me == 0) {
    tile::store(tile::full<float>({1, N}, 1.0f), {0, 0}, data);
    system::notify(sig, 1, {0}, 1, NotifyOp::AtomicAdd);
    tile::store(tile::full<float>({1, N}, 2.0f), {1, 0}, data);
  } else {
    system::wait(sig, {0}, 1, WaitCmp::Ge);
    (void)tile::remote_load(data, 0, {block, 0}, {1, N});
  }
}

void run_two_blocks(Host& h, int block) {
  auto d = h.alloc_window_buffer({2, N}, DType::FP32, "blocks");
  auto s = h.alloc_window_buffer({1}, DType::INT32, "sig");
  for (int r = 0; r < 2; ++r)
    h.dispatch(r, two_blocks, h.window<float>(d, {2, N}), h.window<std::int32_t>(s, {1}), block);
}

TEST(Race, ReadOfThePublishedBlockPasses) {
  NEED_RANKS(2);
  run(race_config(2), [](Host& h) { run_two_blocks(h, 0); });
}

TEST(Race, RemoteLoadAtTheWrongOffsets) {
  NEED_RANKS(2);
  const std::string msg = race_error(2, [](Host& h) { run_two_blocks(h, 1); });
  EXPECT_HAS(msg, "data race on window 'blocks' bytes [256, 512) of rank 0");
  EXPECT_HAS(msg, "tile::remote_load");
  EXPECT_HAS(msg, "tile::store");
}

// Collectives order every member's entry before every member's return.
void around_barrier(Window data, Signal sig, Signal coll) {
  const int me = rank(get_comm_ctx(data));
  tile::store(tile::full<float>({1, N}, 2.0f), {0, 0}, data);
  tensor::barrier(coll);
  (void)tile::remote_load(data, 1 - me, {0, 0}, {1, N});
  tensor::allreduce(data, coll);
  (void)sig;
}

TEST(Race, CollectivesOrderTheirMembers) {
  NEED_RANKS(2);
  run(race_config(2), [](Host& h) {
    auto d = h.alloc_window_buffer({1, N}, DType::FP32, "data");
    auto s = h.alloc_window_buffer({1}, DType::INT32, "sig");
    auto c = h.alloc_window_buffer({2, 1}, DType::INT32, "coll");
    for (int r = 0; r < 2; ++r)
      h.dispatch(r, around_barrier, h.window<float>(d, {1, N}), h.window<std::int32_t>(s, {1}),
                 h.window<std::int32_t>(c, {2, 1}));
  });
}

// A small broadcast is eager: it orders the root's entry before every rank's return, and not the
// other ranks' entries before the root's return. `peer_reads`: rank 1 reads the root's window after
// the broadcast (ordered); else the root reads rank 1's, which rank 1 stored before it (a race).
void around_broadcast(Window data, Signal value, Signal coll, int peer_reads) {
  const int me = rank(get_comm_ctx(data));
  tile::store(tile::full<float>({1, N}, 2.0f), {0, 0}, data);
  tensor::broadcast(value, coll, {.root = 0});  // 8 bytes: eager
  if (peer_reads ? me == 1 : me == 0) (void)tile::remote_load(data, 1 - me, {0, 0}, {1, N});
}

void run_around_broadcast(Host& h, int peer_reads) {
  auto d = h.alloc_window_buffer({1, N}, DType::FP32, "data");
  auto v = h.alloc_window_buffer({2}, DType::INT32, "value");
  auto c = h.alloc_window_buffer({2, 1}, DType::INT32, "coll");
  for (int r = 0; r < 2; ++r)
    h.dispatch(r, around_broadcast, h.window<float>(d, {1, N}), h.window<std::int32_t>(v, {2}),
               h.window<std::int32_t>(c, {2, 1}), peer_reads);
}

TEST(Race, ReadOfTheRootAfterABroadcastPasses) {
  NEED_RANKS(2);
  run(race_config(2), [](Host& h) { run_around_broadcast(h, 1); });
}

TEST(Race, RootReadsAPeerAfterAnEagerBroadcast) {
  NEED_RANKS(2);
  const std::string msg = race_error(2, [](Host& h) { run_around_broadcast(h, 0); });
  EXPECT_HAS(msg, "data race on window 'data'");
  EXPECT_HAS(msg, "tile::remote_load");
  EXPECT_HAS(msg, "tile::store");
}

// Two dispatches of one call on different ranks are not ordered by the host: only by signals.
void store_only(Window data) {
  tile::store(tile::full<float>({1, N}, 3.0f), {0, 0}, data);
}
void load_peer(Window data) {
  (void)tile::remote_load(data, 0, {0, 0}, {1, N});
}

TEST(Race, CallsAreOrderedDispatchesAreNot) {
  NEED_RANKS(2);
  // One call each: the second call's read is ordered after the first call's store.
  run(race_config(2), [](Host& h) {
    auto d = h.alloc_window_buffer({1, N}, DType::FP32, "data");
    h.dispatch(0, store_only, h.window<float>(d, {1, N}));
    h.dispatch(
        1, [](Window) {}, h.window<float>(d, {1, N}));
  });
  const std::string msg = race_error(2, [](Host& h) {
    auto d = h.alloc_window_buffer({1, N}, DType::FP32, "data");
    h.dispatch(0, store_only, h.window<float>(d, {1, N}));
    h.dispatch(1, load_peer, h.window<float>(d, {1, N}));
  });
  EXPECT_HAS(msg, "data race on window 'data' bytes [0, 256) of rank 0");
}

TEST(Race, WarnModeLogsAndFinishes) {
  NEED_RANKS(2);
  // One file per run: under mpirun every process of the job (children of one launcher) appends to it.
  const pid_t run_id = launcher_world_size() > 0 ? getppid() : getpid();
  const std::string log = ::testing::TempDir() + "pld_race_warn." + std::to_string(run_id) + ".log";
  setenv("PLD_LOG_FILE", log.c_str(), 1);
  run(race_config(2, RaceCheck::Warn), [](Host& h) { run_produce_consume(h, 1); });
  unsetenv("PLD_LOG_FILE");
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_HAS(text.str(), "data race on window 'data'");
  if (launcher_world_size() > 0) run(ranks(2), [](Host&) {});  // every process of the job has read it
  if (is_output_rank()) std::remove(log.c_str());
}

TEST(Race, DebugSettingIsParsed) {
  NEED_RANKS(2);
  setenv("PLD_DEBUG", "race,banana", 1);
  expect_usage_error([] { run(ranks(2), [](Host&) {}); }, "PLD_DEBUG=race,banana: 'banana' is not a debug mode");
  setenv("PLD_DEBUG", "race", 1);
  const std::string msg = [] {
    try {
      run(ranks(2), [](Host& h) { run_produce_consume(h, 1); });
    } catch (const RankError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  unsetenv("PLD_DEBUG");
  EXPECT_HAS(msg, "data race on window 'data'");
}

}  // namespace
}  // namespace pld::test
