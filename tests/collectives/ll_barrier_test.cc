// The LL barrier (barrier on a domain whose peers are memory and whose signal has a staging
// channel): it orders every round at P in {2, 3, 5, 8}, also when other collectives share its
// signal, when ranks outnumber cores (waiters sleep) and on a signal without a channel (credit
// barrier); the signal's own cells stay untouched; a missing rank times out with the flag named.
// Under PLD_COLL_RMA=1 (and under mpirun) the same tests run the credit barrier.
#include "support.hpp"

namespace pld::test {
namespace {

constexpr int kRounds = 200;

// Each round: write the round number into my own cell, barrier, read every peer's cell (it must
// hold this round), barrier (nobody writes the next round before everyone has read). Every tenth
// round an allreduce runs on the same signal in between. Counts what was wrong.
void rounds(DistributedTensor<std::int32_t> cell, DistributedTensor<float> x, DistributedTensor<std::int32_t> sig,
            Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(cell);
  const int me = rank(ctx), n = nranks(ctx);
  std::int32_t wrong = 0;
  for (int k = 1; k <= kRounds; ++k) {
    tile::write(cell, {0}, k);
    tensor::barrier(sig);
    for (int p = 0; p < n; ++p) wrong += tile::remote_load(cell, p, {0}, {1})(0) != k;
    tensor::barrier(sig);
    if (k % 10 == 0) {
      tile::write(x, {0}, static_cast<float>(me));
      tensor::allreduce(x, sig, {.mode = k % 20 == 0 ? AllreduceMode::Mesh : AllreduceMode::Auto});
      wrong += tile::read(x, {0}) != static_cast<float>(n * (n - 1) / 2);
    }
  }
  out(0) = wrong;
  for (int s = 0; s < n; ++s) out(1) += tile::read(sig, {s});  // every credit given back, no flag here
}

void check_rounds(int p, int filler_buffers) {
  auto out = HostTensor<std::int32_t>::zeros({p, 2});
  run(ranks(p), [&](Host& h) {
    for (int b = 0; b < filler_buffers; ++b) h.alloc_window_buffer(64, "filler" + std::to_string(b));
    auto cell = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "cell"), {1});
    auto x = h.window<float>(h.alloc_window_buffer({1}, DType::FP32, "x"), {1});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    for (int r = 0; r < p; ++r) h.dispatch(r, rounds, cell, x, sig, out[r]);
  });
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(out(r, 0), 0) << "P=" << p << " rank " << r << ": values wrong after a barrier";
    EXPECT_EQ(out(r, 1), 0) << "P=" << p << " rank " << r << ": signal cells not back to 0";
  }
}

TEST(LLBarrier, OrdersEveryRound) {
  for (int p : {2, 3, 5, 8})  // 5 and 8 ranks on 2 cores: waiters yield and sleep
    if (runs_here(p)) check_rounds(p, 0);
}

TEST(LLBarrier, SignalWithoutAChannelUsesCredits) {
  // Channels cover the first 256 buffer ids at P = 2: this signal has none.
  PLD_REQUIRE_RANKS(2);
  check_rounds(2, 256);
}

void barrier_unless_rank0(DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(sig)) != 0) tensor::barrier(sig);
}

TEST(LLBarrier, MissingRankTimesOutNamingTheFlag) {
  PLD_REQUIRE_RANKS(2);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 runs the credit barrier (collective_error_test.cc)";
  try {
    run(ranks(2, 0.5), [](Host& h) {
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
      for (int r = 0; r < 2; ++r) h.dispatch(r, barrier_unless_rank0, s);
    });
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    EXPECT_NE(std::string(e.what()).find("barrier: waiting for rank 0's arrival at LL barrier 1 (staging "
                                         "'pld.coll_staging' flag [1, 0], channel of signal 'sig'; the flag holds 0) "
                                         "at the deadline"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pld::test
