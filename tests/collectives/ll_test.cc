// The LL one-shot allreduce (AllreduceMode::Auto, payload <= 256 bytes, core_num 1): 64 ranks, its
// dissemination form at 32 and 37 ranks (the bits of Mesh),
// two threads of one kernel running LL allreduces at once on separate signals, LL and two-barrier
// calls alternating on one signal, a signal without a staging channel, and the wait semantics
// (deadline report, abort release).
// Every dtype, op, P in {1,2,3,4,5,8} and size around the threshold: collective_test.cc.
#include "support.hpp"

#include <bit>
#include <thread>

namespace pld::test {
namespace {

constexpr Index kSizes[] = {1, 64, 65};  // fp32: LL, LL at the threshold (five lines), TwoShot

void ll_loop(DistributedTensor<float> v1, DistributedTensor<float> v64, DistributedTensor<float> v65,
             DistributedTensor<std::int32_t> sig, Tensor<float> out) {
  const int me = rank(get_comm_ctx(v1));
  const DistributedTensor<float> views[] = {v1, v64, v65};
  for (int s = 0; s < 3; ++s) {
    const Index n = kSizes[s];
    const DistributedTensor<float>& w = views[s];
    for (int k = 0; k < 3; ++k) {
      for (Index i = 0; i < n; ++i) tile::write(w, {i}, static_cast<float>((me + i + k) % 7));
      tensor::allreduce(w, sig, {.op = k == 1 ? ReduceOp::Max : ReduceOp::Sum});
      for (Index i = 0; i < n; ++i) out(s, k, i) = tile::read(w, {i});
    }
  }
}

float golden(int p, int k, Index i) {
  float acc = 0;
  for (int r = 0; r < p; ++r) {
    const auto x = static_cast<float>((r + i + k) % 7);
    acc = k == 1 ? std::max(acc, x) : acc + x;
  }
  return acc;
}

TEST(LLAllreduce, SixtyFourRanks) {
  PLD_REQUIRE_RANKS(64);
  constexpr int p = 64;
  auto out = HostTensor<float>::zeros({p, 3, 3, 65});
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer({65}, DType::FP32, "v");
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    for (int r = 0; r < p; ++r)
      h.dispatch(r, ll_loop, h.window<float>(b, {1}), h.window<float>(b, {64}), h.window<float>(b, {65}), sig, out[r]);
  });
  for (int r = 0; r < p; ++r)
    for (int s = 0; s < 3; ++s)
      for (int k = 0; k < 3; ++k)
        for (Index i = 0; i < kSizes[s]; ++i)
          ASSERT_EQ(out(r, s, k, i), golden(p, k, i)) << "rank " << r << " size " << kSizes[s] << " rep " << k;
}

// From kDisseminationRanks ranks the LL allreduce gathers its sources by dissemination while P / 2
// of them fit a slot (512 bytes): fp32 counts 1 and 7 at P = 37 (18 sources of 28 bytes) and 8 at
// P = 32 (16 of 32) disseminate, 8 at P = 37 and 9 at P = 32 do not. Sums of values whose rounding
// depends on the order give the bits of Mesh and of a sum in ascending rank order on every rank.
constexpr Index kDisseminated[] = {1, 7, 8, 9};

float unround(int r, Index i) {
  return 1.0F / static_cast<float>(r + 2 * i + 3);
}

void auto_and_mesh(DistributedTensor<float> a, DistributedTensor<float> m, DistributedTensor<std::int32_t> sig,
                   Tensor<float> out) {
  const int me = rank(get_comm_ctx(a));
  const Index n = a.numel();
  for (Index i = 0; i < n; ++i) {
    tile::write(a, {i}, unround(me, i));
    tile::write(m, {i}, unround(me, i));
  }
  tensor::allreduce(a, sig);
  tensor::allreduce(m, sig, {.mode = AllreduceMode::Mesh});
  for (Index i = 0; i < n; ++i) {
    out(0, i) = tile::read(a, {i});
    out(1, i) = tile::read(m, {i});
  }
}

TEST(LLAllreduce, DisseminationGivesTheBitsOfMesh) {
  for (int p : {32, 37}) {
    PLD_REQUIRE_RANKS(p);
    auto out = HostTensor<float>::zeros({p, 4, 2, 9});
    run(ranks(p), [&](Host& h) {
      auto a = h.alloc_window_buffer({9}, DType::FP32, "a");
      auto m = h.alloc_window_buffer({9}, DType::FP32, "m");
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
      for (int s = 0; s < 4; ++s) {
        const Index n = kDisseminated[s];
        for (int r = 0; r < p; ++r)
          h.dispatch(r, auto_and_mesh, h.window<float>(a, {n}), h.window<float>(m, {n}), sig, out[r][s]);
      }
    });
    for (int s = 0; s < 4; ++s)
      for (Index i = 0; i < kDisseminated[s]; ++i) {
        float golden = unround(0, i);
        for (int r = 1; r < p; ++r) golden += unround(r, i);
        for (int r = 0; r < p; ++r) {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(out(r, s, 0, i)), std::bit_cast<std::uint32_t>(golden))
              << "P=" << p << " rank " << r << " count " << kDisseminated[s] << " element " << i;
          ASSERT_EQ(std::bit_cast<std::uint32_t>(out(r, s, 1, i)), std::bit_cast<std::uint32_t>(golden))
              << "P=" << p << " rank " << r << " count " << kDisseminated[s] << " element " << i << " (Mesh)";
        }
      }
  }
}

// Two threads of each rank's kernel: allreduces on v1/sig1 and on v2/sig2 at the same time. The
// two signals are separate buffers, so their LL calls use separate staging channels.
void two_threads(DistributedTensor<std::int32_t> v1, DistributedTensor<std::int32_t> s1,
                 DistributedTensor<std::int32_t> v2, DistributedTensor<std::int32_t> s2, Tensor<std::int32_t> out) {
  const int me = rank(get_comm_ctx(v1));
  auto loop = [me, out](DistributedTensor<std::int32_t> v, DistributedTensor<std::int32_t> s, int which) mutable {
    for (int k = 0; k < 50; ++k) {
      tile::write(v, {0}, (me + 1) * (k + 1) + which);
      tensor::allreduce(v, s);
      out(which, k) = tile::read(v, {0});
    }
  };
  std::thread t(loop, v2, s2, 1);
  loop(v1, s1, 0);
  t.join();
}

class LLAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(LLAllreduce, ConcurrentCallsOnSeparateSignals) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  auto out = HostTensor<std::int32_t>::zeros({p, 2, 50});
  run(ranks(p), [&](Host& h) {
    auto v1 = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "v1"), {1});
    auto v2 = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "v2"), {1});
    auto s1 = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "s1"), {p});
    auto s2 = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "s2"), {p});
    for (int r = 0; r < p; ++r) h.dispatch(r, two_threads, v1, s1, v2, s2, out[r]);
  });
  for (int r = 0; r < p; ++r)
    for (int which = 0; which < 2; ++which)
      for (int k = 0; k < 50; ++k)
        ASSERT_EQ(out(r, which, k), (k + 1) * p * (p + 1) / 2 + which * p) << "P=" << p << " rank " << r;
}

void ll_forgotten(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(v)) == 1) tensor::allreduce(v, sig);  // rank 0 never joins
}

TEST(LLAllreduce, MissingParticipantTimesOutWithTheStagingWord) {
  PLD_REQUIRE_RANKS(2);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 turns LL off (the wait is a credit barrier's)";
  try {
    run(ranks(2, 0.5), [](Host& h) {
      auto v = h.window<float>(h.alloc_window_buffer({3}, DType::FP32, "v"), {3});
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
      for (int r = 0; r < 2; ++r) h.dispatch(r, ll_forgotten, v, s);
    });
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    EXPECT_NE(std::string(e.what()).find("allreduce: waiting for rank 0's data of LL call 1 (staging "
                                         "'pld.coll_staging' line [1, 0, 0], channel of signal 'sig'"),
              std::string::npos)
        << e.what();
  }
}

TEST(LLAllreduce, SignalWithoutAChannelRunsTwoShot) {
  PLD_REQUIRE_RANKS(2);
  // Channels cover the first 13 buffer ids at P = 2 (256 KiB of staging per rank): a signal
  // allocated after 256 others has none, so the same tiny allreduce waits in a credit barrier.
  try {
    run(ranks(2, 0.5), [](Host& h) {
      for (int b = 0; b < 256; ++b) h.alloc_window_buffer(64, "filler" + std::to_string(b));
      auto v = h.window<float>(h.alloc_window_buffer({3}, DType::FP32, "v"), {3});
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
      for (int r = 0; r < 2; ++r) h.dispatch(r, ll_forgotten, v, s);
    });
    FAIL() << "expected a wait timeout";
  } catch (const RankError& e) {
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    EXPECT_NE(std::string(e.what()).find("allreduce: waiting for rank 0's credit 1 on signal 'sig'"), std::string::npos)
        << e.what();
  }
}

void ll_peer_fails(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig) {
  if (rank(get_comm_ctx(v)) == 0) throw std::runtime_error("rank 0 gives up");
  tensor::allreduce(v, sig);  // released by the abort, never by data
}

TEST(LLAllreduce, WaitIsReleasedWhenAPeerFails) {
  PLD_REQUIRE_RANKS(3);
  // A deadline far beyond the test's watchdog: only the abort can end rank 1's wait.
  try {
    run(ranks(3, 3600), [](Host& h) {
      auto v = h.window<float>(h.alloc_window_buffer({3}, DType::FP32, "v"), {3});
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({3}, DType::INT32, "sig"), {3});
      for (int r = 0; r < 3; ++r) h.dispatch(r, ll_peer_fails, v, s);
    });
    FAIL() << "expected a rank failure";
  } catch (const RankError& e) {
    EXPECT_EQ(e.rank(), 0);
    EXPECT_NE(std::string(e.what()).find("rank 0 gives up"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(P, LLAllreduce, ::testing::ValuesIn(rank_counts(2, 5, {4})), rank_count_name);

}  // namespace
}  // namespace pld::test
