// The LL form of allgather, reduce_scatter, all_to_all and all_to_all_v, and the eager broadcast (messages of
// at most PLD_COLL_LL_MAX bytes): every LL collective and a two-barrier one back to back on ONE
// signal (they share its staging channel and its epoch sequence); the same loop with
// PLD_COLL_LL_MAX=512 and =0 (the two-barrier copies for the
// small calls too); which path each collective takes (the wait of a rank whose peer never joins
// names a staging line or a credit); a broadcast root running ahead of late peers, in one line,
// in several, and pushed between LL barriers; int8 rows whose last line is partial.
// Every dtype, op, P in {1,2,3,4,5,8} and size (LL and not): collective_test.cc.
#include "support.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace pld::test {
namespace {

constexpr int kIters = 12;
constexpr Index kGather = 3;               // int32 rows of 12 bytes: LL
constexpr Index kScatter = 5;              // int16 rows of 10 bytes: LL
constexpr Index kSmall = 8;                // int32 rows of 32 bytes: LL, at the default threshold
constexpr Index kLarge = 65;               // int32 rows of 260 bytes: two barriers around the pushes
constexpr Index kBroadcast = 4;            // int32, 16 bytes: LL
constexpr Index kMaxRecv = 2, kVCols = 4;  // all_to_all_v: a 2 * 4 * 4 = 32-byte block, 36-byte message: LL

using I32 = DistributedTensor<std::int32_t>;

// One kernel, kIters rounds of: allreduce, allgather, reduce_scatter (Max), all_to_all of 8 and
// of 65 columns, broadcast from a root that moves, all_to_all_v, barrier — all on `sig`. Each rank checks every result
// against its formula and counts what differs. (Windows travel as kernel arguments one by one: that is what binds
// them.)
void mixed(I32 ar, I32 ag_in, I32 ag, DistributedTensor<std::int16_t> rs, I32 small_in, I32 small, I32 large_in,
           I32 large, I32 bc, I32 v_in, I32 v, I32 v_send, I32 v_recv, I32 sig, Tensor<std::int64_t> wrong) {
  const auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), p = nranks(ctx);
  std::int64_t bad = 0;
  auto rs_value = [](int r, int row, Index i, int k) {
    return static_cast<std::int16_t>((r * 13 + row * 5 + i + k) % 97);
  };
  auto a2a_value = [](int from, int to, Index i, int k) { return from * 1000 + to * 50 + static_cast<int>(i) + k; };
  auto v_rows = [](int from, int to, int k) { return static_cast<int>((from + 2 * to + k) % (kMaxRecv + 1)); };
  for (int k = 0; k < kIters; ++k) {
    tile::write(ar, {0}, me * 10 + k);
    for (Index i = 0; i < kGather; ++i) tile::write(ag_in, {0, i}, me * 100 + k * 7 + static_cast<int>(i));
    for (int row = 0; row < p; ++row) {
      for (Index i = 0; i < kScatter; ++i) tile::write(rs, {row, i}, rs_value(me, row, i, k));
      for (Index i = 0; i < kSmall; ++i) tile::write(small_in, {row, i}, a2a_value(me, row, i, k));
      for (Index i = 0; i < kLarge; ++i) tile::write(large_in, {row, i}, a2a_value(me, row, i, k));
      tile::write(v_send, {row}, v_rows(me, row, k));
      for (Index r = 0; r < kMaxRecv; ++r)
        for (Index i = 0; i < kVCols; ++i)
          tile::write(v_in, {row * kMaxRecv + r, i}, a2a_value(me, row, r * 10 + i, k));
    }
    const int root = k % p;
    for (Index i = 0; i < kBroadcast; ++i) tile::write(bc, {i}, me == root ? root * 31 + k + static_cast<int>(i) : -1);

    tensor::allreduce(ar, sig);
    tensor::allgather(ag_in, ag, sig);
    tensor::reduce_scatter(rs, sig, {.op = ReduceOp::Max});
    tensor::all_to_all(small_in, small, sig);
    tensor::all_to_all(large_in, large, sig);
    tensor::broadcast(bc, sig, {.root = root});
    tensor::all_to_all_v(v_in, v, sig, v_send, v_recv);
    tensor::barrier(sig);

    bad += tile::read(ar, {0}) != 10 * p * (p - 1) / 2 + p * k;
    for (int s = 0; s < p; ++s) {
      for (Index i = 0; i < kGather; ++i) bad += tile::read(ag, {s, i}) != s * 100 + k * 7 + static_cast<int>(i);
      for (Index i = 0; i < kSmall; ++i) bad += tile::read(small, {s, i}) != a2a_value(s, me, i, k);
      for (Index i = 0; i < kLarge; ++i) bad += tile::read(large, {s, i}) != a2a_value(s, me, i, k);
    }
    for (Index i = 0; i < kBroadcast; ++i) bad += tile::read(bc, {i}) != root * 31 + k + static_cast<int>(i);
    for (int s = 0; s < p; ++s) {
      const int rows = v_rows(s, me, k);
      bad += tile::read(v_recv, {s, 0}) != rows;
      for (Index r = 0; r < rows; ++r)
        for (Index i = 0; i < kVCols; ++i)
          bad += tile::read(v, {s * kMaxRecv + r, i}) != a2a_value(s, me, r * 10 + i, k);
    }
    for (Index i = 0; i < kScatter; ++i) {
      std::int16_t want = 0;
      for (int r = 0; r < p; ++r) want = std::max(want, rs_value(r, me, i, k));
      bad += tile::read(rs, {me, i}) != want;
    }
  }
  wrong(0) = bad;
}

void run_mixed(int p) {
  auto wrong = HostTensor<std::int64_t>::full({p, 1}, -1);
  auto cfg = ranks(p);
  if (p > 8) cfg.heap_bytes = 1 << 20;
  run(cfg, [&](Host& h) {
    // The signal first: staging channels go to the first buffer ids (8 of them at P = 64).
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    auto i32 = [&](Index rows, Index cols, const std::string& name) {
      return h.window<std::int32_t>(h.alloc_window_buffer({rows, cols}, DType::INT32, name), {rows, cols});
    };
    auto ar = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "ar"), {1});
    auto ag_in = i32(1, kGather, "ag_in");
    auto ag = i32(p, kGather, "ag");
    auto small_in = i32(p, kSmall, "small_in");
    auto small = i32(p, kSmall, "small");
    auto large_in = i32(p, kLarge, "large_in");
    auto large = i32(p, kLarge, "large");
    auto bc = h.window<std::int32_t>(h.alloc_window_buffer({kBroadcast}, DType::INT32, "bc"), {kBroadcast});
    auto v_in = i32(p * kMaxRecv, kVCols, "v_in");
    auto v = i32(p * kMaxRecv, kVCols, "v");
    auto v_send = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "v_send"), {p});
    auto v_recv = i32(p, 1, "v_recv");
    auto rs = h.window<std::int16_t>(h.alloc_window_buffer({p, kScatter}, DType::INT16, "rs"), {p, kScatter});
    for (int r = 0; r < p; ++r)
      h.dispatch(r, mixed, ar, ag_in, ag, rs, small_in, small, large_in, large, bc, v_in, v, v_send, v_recv, sig,
                 wrong[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "P=" << p << " rank " << r;
}

// Every collective back to back at P = 2, 3, 5, 8; the other LLRows tests at P = 2, 3.
class LLRowsMixed : public ::testing::TestWithParam<int> {};
class LLRows : public ::testing::TestWithParam<int> {};

TEST_P(LLRowsMixed, EveryCollectiveBackToBackOnOneSignal) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  run_mixed(p);
}

TEST(LLRows, SixtyFourRanks) {
  PLD_REQUIRE_RANKS(64);
  run_mixed(64);
}

TEST_P(LLRows, RowsUpToTheStagingMaximum) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  ScopedEnv max("PLD_COLL_LL_MAX", "512");  // the 260-byte rows too (five lines each)
  run_mixed(p);
}

TEST_P(LLRows, SmallRowsWithoutLL) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  ScopedEnv off("PLD_COLL_LL_MAX", "0");
  run_mixed(p);
}

// Rank 1 calls collective `which` (small enough for LL), rank 0 never joins.
enum Which : int { kAllToAll, kAllgather, kReduceScatter, kBroadcastCall, kAllToAllV };
constexpr const char* kWhichName[] = {"all_to_all", "allgather", "reduce_scatter", "broadcast", "all_to_all_v"};

void forgotten(int which, I32 in, I32 out, I32 row, I32 counts, I32 recv, I32 sig) {
  if (rank(get_comm_ctx(sig)) != 1) return;
  switch (which) {
    case kAllToAll: tensor::all_to_all(in, out, sig); break;
    case kAllgather: tensor::allgather(row, out, sig); break;
    case kReduceScatter: tensor::reduce_scatter(out, sig); break;
    case kBroadcastCall: tensor::broadcast(row, sig, {.root = 0}); break;
    default:
      tile::write(counts, {0}, 1);
      tile::write(counts, {1}, 1);
      tensor::all_to_all_v(in, out, sig, counts, recv);
  }
}

// `cols` int32 per row (all_to_all_v: MAX_RECV 1, so a block of 4 * cols bytes).
std::string forgotten_message(int which = kAllToAll, Index cols = 3) {
  try {
    run(ranks(2, 0.5), [which, cols](Host& h) {
      auto in = h.window<std::int32_t>(h.alloc_window_buffer({2, cols}, DType::INT32, "in"), {2, cols});
      auto out = h.window<std::int32_t>(h.alloc_window_buffer({2, cols}, DType::INT32, "out"), {2, cols});
      auto row = h.window<std::int32_t>(h.alloc_window_buffer({1, cols}, DType::INT32, "row"), {1, cols});
      auto counts = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "counts"), {2});
      auto recv = h.window<std::int32_t>(h.alloc_window_buffer({2, 1}, DType::INT32, "recv"), {2, 1});
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
      for (int r = 0; r < 2; ++r) h.dispatch(r, forgotten, which, in, out, row, counts, recv, sig);
    });
  } catch (const RankError& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_EQ(e.cause(), RankFailure::WaitTimeout);
    return e.what();
  }
  ADD_FAILURE() << "expected a wait timeout";
  return "";
}

// The path collective `which` of `cols` columns took, read off the wait of its forgotten call: "LL"
// (a staging word), "pushed" (an LL barrier's flag: the pushed broadcast), "credit" (the entry
// barrier of the credit path, on LL flags), or "neither".
const char* forgotten_path(int which, Index cols) {
  const std::string what = forgotten_message(which, cols);
  const std::string waiting = std::string(kWhichName[which]) + ": waiting for rank 0's ";
  if (what.find(waiting + "data of LL call 1 (staging") != std::string::npos) return "LL";
  if (what.find(waiting + "data of eager broadcast 1 (staging 'pld.coll_staging' ring line [") != std::string::npos)
    return "eager";
  if (what.find(waiting + "arrival at LL barrier") != std::string::npos) return "pushed";
  if (what.find(waiting + "arrival at entry barrier") != std::string::npos) return "credit";
  return "neither";
}

TEST(LLRows, MissingPeerTimesOutWithTheStagingWordOrTheCredit) {
  PLD_REQUIRE_RANKS(2);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 turns LL off (the wait is a credit barrier's)";
  // 3 int32 = 12 bytes per row: one line, the doorbell on its epoch.
  const std::string ll = forgotten_message();
  EXPECT_NE(ll.find("all_to_all: waiting for rank 0's data of LL call 1 (staging 'pld.coll_staging' line [1, 0, 0], "
                    "channel of signal 'sig'"),
            std::string::npos)
      << ll;
  ScopedEnv off("PLD_COLL_LL_MAX", "0");
  const std::string credit = forgotten_message();
  EXPECT_NE(credit.find("all_to_all: waiting for rank 0's arrival at entry barrier 1 (staging 'pld.coll_staging' flag "
                        "[1, 0], channel of signal 'sig'"),
            std::string::npos)
      << credit;
}

// Which path ran shows in the wait: every small collective waits for a staging word, not a credit
// (a small broadcast for the first line of its ring).
TEST(LLRows, EverySmallCollectiveTakesLL) {
  PLD_REQUIRE_RANKS(2);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 turns LL off (the wait is a credit barrier's)";
  for (int which : {kAllgather, kReduceScatter, kAllToAllV}) {
    const std::string what = forgotten_message(which);
    EXPECT_NE(what.find(std::string(kWhichName[which]) + ": waiting for rank 0's data of LL call 1 (staging"),
              std::string::npos)
        << what;
  }
  EXPECT_STREQ(forgotten_path(kBroadcastCall, 3), "eager");
}

// all_to_all_v's threshold is on its block: the 4-byte count rides along, up to the 512-byte slot.
TEST(LLRows, AllToAllVThresholdIsOnTheBlock) {
  PLD_REQUIRE_RANKS(2);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 turns LL off (the wait is a credit barrier's)";
  auto path = [](Index cols) { return forgotten_path(kAllToAllV, cols); };
  EXPECT_STREQ(path(64), "LL");  // a 256-byte block: a 260-byte message, PLD_COLL_LL_MAX 256
  EXPECT_STREQ(path(65), "credit");
  {
    ScopedEnv max("PLD_COLL_LL_MAX", "64");
    EXPECT_STREQ(path(16), "LL");  // a 64-byte block: a 68-byte message, two lines
    EXPECT_STREQ(path(17), "credit");
  }
  ScopedEnv max("PLD_COLL_LL_MAX", "512");
  EXPECT_STREQ(path(127), "LL");  // 508 + 4: the whole slot
  EXPECT_STREQ(path(128), "credit");
}

// A broadcast is eager up to kEagerMaxBytes (2 KiB) and PLD_BROADCAST_PUSH_MAX over the P - 1
// peers (the derived value is at least 1 KiB); above, it is pushed between LL barriers only where
// PLD_BROADCAST_PUSH_MAX was chosen (set or tuned), else left to the ranks' shared copies.
TEST(LLRows, BroadcastAboveTheEagerSizeIsPushedOnlyWhenChosen) {
  PLD_REQUIRE_RANKS(2);
  if (coll_rma()) GTEST_SKIP() << "PLD_COLL_RMA=1 turns LL off (the wait is a credit barrier's)";
  auto path = [](Index cols) { return forgotten_path(kBroadcastCall, cols); };
  ScopedEnv automatic("PLD_BROADCAST_PUSH_MAX", "auto");
  EXPECT_STREQ(path(256), "eager");   // 1 KiB
  EXPECT_STREQ(path(513), "credit");  // 2052 bytes: past the eager size
  {
    ScopedEnv small("PLD_BROADCAST_PUSH_MAX", "1K");
    EXPECT_STREQ(path(256), "eager");
    EXPECT_STREQ(path(257), "credit");  // 1028 bytes: past the 1 KiB for the one peer, eager or pushed
  }
  ScopedEnv chosen("PLD_BROADCAST_PUSH_MAX", "8K");
  EXPECT_STREQ(path(512), "eager");  // 2 KiB
  EXPECT_STREQ(path(513), "pushed");
}

// The root of a broadcast runs ahead of peers that arrive late, call after call: it must not
// overwrite a ring line a peer has not read (300 calls of a 128-line ring: the root waits for the
// late ones' positions), nor, pushed between LL barriers, a window whose rank has not entered the call.
// `barriers`: an LL barrier on the same signal after every third call (the pushed broadcast shares
// its flags).
void late_peers(I32 v, I32 sig, Tensor<std::int64_t> wrong, int barriers) {
  const int me = rank(get_comm_ctx(sig));
  const Index n = v.shape()[0];
  std::int64_t bad = 0;
  for (int k = 0; k < 300; ++k) {
    if (me == 0) {
      for (Index i = 0; i < n; ++i) tile::write(v, {i}, static_cast<std::int32_t>(1000 * (i + 1) + k));
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200 * me));
    }
    tensor::broadcast(v, sig, {.root = 0});
    for (Index i = 0; i < n; ++i) bad += tile::read(v, {i}) != 1000 * (i + 1) + k;
    if (barriers && k % 3 == 2) tensor::barrier(sig);
  }
  wrong(0) = bad;
}

TEST_P(LLRows, BroadcastRootAheadOfLatePeers) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  auto wrong = HostTensor<std::int64_t>::full({p, 1}, -1);
  run(ranks(p), [&](Host& h) {
    auto v = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "v"), {2});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    for (int r = 0; r < p; ++r) h.dispatch(r, late_peers, v, sig, wrong[r], 0);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "P=" << p << " rank " << r;
}

// A broadcast of `n` int32 from a root running ahead, with LL barriers of the program on the same
// signal, under PLD_BROADCAST_PUSH_MAX=`push`.
void late_peers_with_barriers(int p, Index n, const char* push) {
  ScopedEnv env("PLD_BROADCAST_PUSH_MAX", push);
  auto wrong = HostTensor<std::int64_t>::full({p, 1}, -1);
  run(ranks(p), [&](Host& h) {
    auto v = h.window<std::int32_t>(h.alloc_window_buffer({n}, DType::INT32, "v"), {n});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    for (int r = 0; r < p; ++r) h.dispatch(r, late_peers, v, sig, wrong[r], 1);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "P=" << p << " rank " << r;
}

// 256 bytes: eager in five lines (within the slot and, at P <= 3, PLD_BROADCAST_PUSH_MAX).
TEST_P(LLRows, MultiLineBroadcastRootAheadOfLatePeers) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  late_peers_with_barriers(p, 64, "4K");
}

// 2 KiB: above the LL slot, within PLD_BROADCAST_PUSH_MAX at P <= 3 (the root pushes between two
// LL barriers).
TEST_P(LLRows, PushedBroadcastRootAheadOfLatePeers) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  late_peers_with_barriers(p, 512, "8K");
}

// int8 rows of 13 and 31 bytes: several words, the last one partial.
void int8_rows(DistributedTensor<std::int8_t> in13, DistributedTensor<std::int8_t> out13,
               DistributedTensor<std::int8_t> in31, DistributedTensor<std::int8_t> out31, Tensor<std::int64_t> wrong,
               I32 sig) {
  const auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), p = nranks(ctx);
  auto value = [](int from, int to, Index i) { return static_cast<std::int8_t>((from * 37 + to * 11 + i) % 127); };
  std::int64_t bad = 0;
  for (int s = 0; s < p; ++s) {
    for (Index i = 0; i < 13; ++i) tile::write(in13, {s, i}, value(me, s, i));
    for (Index i = 0; i < 31; ++i) tile::write(in31, {s, i}, value(me, s, i));
  }
  tensor::all_to_all(in13, out13, sig);
  tensor::all_to_all(in31, out31, sig);
  for (int s = 0; s < p; ++s) {
    for (Index i = 0; i < 13; ++i) bad += tile::read(out13, {s, i}) != value(s, me, i);
    for (Index i = 0; i < 31; ++i) bad += tile::read(out31, {s, i}) != value(s, me, i);
  }
  wrong(0) = bad;
}

TEST_P(LLRows, Int8RowsEndingInAPartialWord) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  ScopedEnv max("PLD_COLL_LL_MAX", "64");
  auto wrong = HostTensor<std::int64_t>::full({p, 1}, -1);
  run(ranks(p), [&](Host& h) {
    auto w = [&](Index cols, const std::string& name) {
      return h.window<std::int8_t>(h.alloc_window_buffer({p, cols}, DType::INT8, name), {p, cols});
    };
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    auto in13 = w(13, "in13"), out13 = w(13, "out13"), in31 = w(31, "in31"), out31 = w(31, "out31");
    for (int r = 0; r < p; ++r) h.dispatch(r, int8_rows, in13, out13, in31, out31, wrong[r], sig);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "P=" << p << " rank " << r;
}

INSTANTIATE_TEST_SUITE_P(P, LLRowsMixed, ::testing::ValuesIn(rank_counts(2, 8, {4})), rank_count_name);
INSTANTIATE_TEST_SUITE_P(P, LLRows, ::testing::ValuesIn(rank_counts(2, 3)), rank_count_name);

}  // namespace
}  // namespace pld::test
