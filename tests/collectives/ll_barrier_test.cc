// The LL barrier (barrier on a domain whose peers are memory and whose signal has a staging
// channel): it orders every round at P in {2, 3, 5, 8} and, as a dissemination barrier, 32 and 37, also when other
// collectives share its signal and when ranks outnumber cores (waiters sleep), and the signal's cells end at 0; a
// missing rank times out naming the flag at every P (which proves the LL barrier ran), or naming
// the credit on a signal without a channel (the credit barrier's fallback).
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
  for (int s = 0; s < n; ++s) out(1) += tile::read(sig, {s}) != 0;  // every credit given back
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
    EXPECT_EQ(out(r, 1), 0) << "P=" << p << " rank " << r << ": signal cells not all back to 0";
  }
}

class LLBarrier : public ::testing::TestWithParam<int> {};

TEST_P(LLBarrier, OrdersEveryRound) {
  const int p = GetParam();  // 5 and 8 ranks on 2 cores: waiters yield and sleep
  PLD_REQUIRE_RANKS(p);
  check_rounds(p, 0);
}

// From kDisseminationRanks the LL barrier runs log2 P rounds (dissemination): a power of two and
// a count that is not one, both far beyond the cores.
TEST(LLBarrier, DisseminationOrdersEveryRound) {
  for (int p : {32, 37}) {
    PLD_REQUIRE_RANKS(p);
    check_rounds(p, 0);
  }
}

TEST(LLBarrier, SignalWithoutAChannelOrdersEveryRound) {
  // Channels cover the first 256 buffer ids at P = 2: this signal has none (credit barrier).
  PLD_REQUIRE_RANKS(2);
  check_rounds(2, 256);
}

void barrier_unless_rank0(DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(sig)) != 0) tensor::barrier(sig);
}

// Rank 0 never enters: every other rank waits for it; the first failure names what it waited on.
std::string missing_rank0(int p, int filler_buffers) {
  try {
    run(ranks(p, 0.5), [&](Host& h) {
      for (int b = 0; b < filler_buffers; ++b) h.alloc_window_buffer(64, "filler" + std::to_string(b));
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
      for (int r = 0; r < p; ++r) h.dispatch(r, barrier_unless_rank0, s);
    });
  } catch (const RankError& e) {
    EXPECT_NE(e.rank(), 0);
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    return e.what();
  }
  ADD_FAILURE() << "P=" << p << ": expected a wait timeout";
  return {};
}

TEST_P(LLBarrier, MissingRankTimesOutNamingTheFlag) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 runs the credit barrier (collective_error_test.cc)";
  const std::string msg = missing_rank0(p, 0);
  EXPECT_NE(msg.find("barrier: waiting for rank 0's arrival at LL barrier 1 (staging 'pld.coll_staging' flag [1, 0], "
                     "channel of signal 'sig'; the flag holds 0) at the deadline"),
            std::string::npos)
      << "P=" << p << ": " << msg;
}

TEST(LLBarrier, SignalWithoutAChannelTimesOutNamingTheCredit) {
  PLD_REQUIRE_RANKS(2);
  const std::string msg = missing_rank0(2, 256);
  EXPECT_NE(msg.find("barrier: waiting for rank 0's credit 1 on signal 'sig' cell [0]"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(P, LLBarrier, ::testing::ValuesIn(rank_counts(2, 8, {4})), rank_count_name);

}  // namespace
}  // namespace pld::test
