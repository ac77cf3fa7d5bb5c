// signal_fetch, test and wait_until_any / all / some at P = 1, 2, 3, 4, 8: every WaitCmp, test
// that never blocks, a consumer that serves its producers in the order they arrive (forced by
// go-tokens, not by timing), fairness of wait_until_any, the per-cell expected-value form, the
// release/acquire contract and the validation of every argument.
#include "support.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

namespace pld::test {
namespace {

class SignalWaits : public ::testing::TestWithParam<int> {};

constexpr WaitCmp kAllCmps[] = {WaitCmp::Eq, WaitCmp::Ne, WaitCmp::Gt, WaitCmp::Ge, WaitCmp::Lt, WaitCmp::Le};

// The reference of a comparison: value cmp expected.

// Each rank Sets -5 on its right neighbour's cell, then checks every comparison against expected
// values around -5 with test (against the reference), and waits with every comparison that holds
// (single cell, any, all and some, per-cell form included).
void every_cmp(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> bad) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  system::notify(sig, (me + 1) % n, {0}, -5, NotifyOp::Set);
  system::wait(sig, {0}, -5, WaitCmp::Eq);
  int wrong = system::signal_fetch(sig, {0}) != -5;
  const std::vector<Dims> cells = {{1}, {0}, {2}};  // cells 1 and 2 hold 0
  for (WaitCmp cmp : kAllCmps)
    for (std::int32_t e = -7; e <= -3; ++e) {
      wrong += system::test(sig, {0}, e, cmp) != cmp_holds(-5, e, cmp);
      if (!cmp_holds(-5, e, cmp)) continue;
      system::wait(sig, {0}, e, cmp);
      // Cells 1 and 2 (value 0) get an expected value that they fail; cell 0 (index 1) holds.
      std::int32_t fail = 0;
      while (cmp_holds(0, fail, cmp)) fail = cmp == WaitCmp::Lt || cmp == WaitCmp::Le ? fail - 1 : fail + 1;
      const std::vector<std::int32_t> per_cell = {fail, e, fail};
      wrong += system::wait_until_any(sig, cells, per_cell, cmp) != 1;
      wrong += system::wait_until_some(sig, cells, per_cell, cmp) != std::vector<std::size_t>{1};
      system::wait_until_all(sig, std::vector<Dims>{{0}}, e, cmp);
    }
  bad(0) = wrong;
}

TEST_P(SignalWaits, EveryComparison) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  auto bad = HostTensor<std::int32_t>::zeros({p, 1});
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer({3}, DType::INT32, "sig");
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, every_cmp, h.window<std::int32_t>(b, {3}), bad[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(bad(r, 0), 0) << "rank " << r;
}

// test never blocks: on an unset cell it returns false at once; after the notify (which the
// writer sends only once the reader's test returned) a test that returns true acquires the data
// written before the notify. Rank 0 reads, its right neighbour writes (itself at P = 1).
void test_then_acquire(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig,
                       Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  const int writer = 1 % n;
  if (me == 0) {
    out(0) = system::test(sig, {0}, 1, WaitCmp::Ge) ? 1 : 0;  // nobody has notified yet
    out(1) = system::signal_fetch(sig, {0});
    system::notify(sig, writer, {1}, 1, NotifyOp::Set);  // the go-token
  }
  if (me == writer) {
    system::wait(sig, {1}, 1, WaitCmp::Eq);
    Tile<std::int32_t> t({1, 64});
    for (int i = 0; i < 64; ++i) t(0, i) = 1000 + i;
    tile::remote_store(t, data, 0, {0, 0});
    system::notify(sig, 0, {0}, 1, NotifyOp::AtomicAdd);
  }
  if (me == 0) {
    while (!system::test(sig, {0}, 1, WaitCmp::Ge)) {
    }
    auto got = tile::load(data, {0, 0}, {1, 64});
    int good = 1;
    for (int i = 0; i < 64; ++i) good &= got(0, i) == 1000 + i;
    out(2) = good;
    out(3) = system::signal_fetch(sig, {0});
  }
}

TEST_P(SignalWaits, TestNeverBlocksAndAcquires) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  auto out = HostTensor<std::int32_t>::zeros({p, 4});
  run(ranks(p), [&](Host& h) {
    auto d = h.alloc_window_buffer({1, 64}, DType::INT32, "data");
    auto s = h.alloc_window_buffer({2}, DType::INT32, "sig");
    for (int r = 0; r < h.world_size(); ++r)
      h.dispatch(r, test_then_acquire, h.window<std::int32_t>(d, {1, 64}), h.window<std::int32_t>(s, {2}), out[r]);
  });
  EXPECT_EQ(out(0, 0), 0) << "test on an unset cell returned true";
  EXPECT_EQ(out(0, 1), 0);
  EXPECT_EQ(out(0, 2), 1) << "data written before the notify not visible after test returned true";
  EXPECT_EQ(out(0, 3), 1);
}

// The order in which the consumer (rank 0) lets its producers go: alternately from the back and
// the front (1..P-1 at P <= 2).
std::vector<int> arrival_order(int n) {
  std::vector<int> order;
  for (int lo = 1, hi = n - 1; lo <= hi; --hi) {
    order.push_back(hi);
    if (lo < hi) order.push_back(lo++);
  }
  return order;
}

// Producers 1..P-1 each wait for a go-token from the consumer, put a chunk into their row of the
// consumer's data window and notify their row's cell. The consumer gives one token at a time and
// serves whichever producer is ready with wait_until_any; since only the producer it let go can
// be ready, the indices it gets must follow the arrival order exactly. A served cell's expected
// value rises to 2 (per-cell form), so it is not served again.
void serve_in_arrival_order(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> ready,
                            DistributedTensor<std::int32_t> go, Tensor<std::int32_t> served) {
  auto ctx = get_comm_ctx(ready);
  const int me = rank(ctx), n = nranks(ctx);
  const Index len = data.shape()[1];
  if (me != 0) {
    system::wait(go, {0}, 1, WaitCmp::Eq);
    Tile<std::int32_t> t({1, len});
    for (Index i = 0; i < len; ++i) t(0, i) = me * 1000 + static_cast<int>(i);
    tile::remote_store(t, data, 0, {me, 0});
    system::notify(ready, 0, {me}, 1, NotifyOp::AtomicAdd);
    return;
  }
  std::vector<Dims> cells;
  for (int s = 1; s < n; ++s) cells.push_back({s});
  std::vector<std::int32_t> expected(cells.size(), 1);
  int k = 0;
  for (int producer : arrival_order(n)) {
    system::notify(go, producer, {0}, 1, NotifyOp::Set);
    const std::size_t i = system::wait_until_any(ready, cells, expected, WaitCmp::Ge);
    expected[i] = 2;
    const int s = static_cast<int>(cells[i][0]);
    auto got = tile::load(data, {s, 0}, {1, len});
    bool good = true;
    for (Index j = 0; j < len; ++j) good &= got(0, j) == s * 1000 + static_cast<int>(j);
    served(k++) = good ? s : -s;
  }
}

TEST_P(SignalWaits, WaitUntilAnyServesProducersInArrivalOrder) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  if (p < 2) GTEST_SKIP() << "needs a producer";
  auto served = HostTensor<std::int32_t>::zeros({p, p - 1});
  run(ranks(p), [&](Host& h) {
    const int n = h.world_size();
    auto d = h.alloc_window_buffer({n, 257}, DType::INT32, "data");
    auto rd = h.alloc_window_buffer({n}, DType::INT32, "ready");
    auto g = h.alloc_window_buffer({1}, DType::INT32, "go");
    for (int r = 0; r < n; ++r)
      h.dispatch(r, serve_in_arrival_order, h.window<std::int32_t>(d, {n, 257}), h.window<std::int32_t>(rd, {n}),
                 h.window<std::int32_t>(g, {1}), served[r]);
  });
  const std::vector<int> order = arrival_order(p);
  for (int k = 0; k < p - 1; ++k) EXPECT_EQ(served(0, k), order[static_cast<std::size_t>(k)]) << "service " << k;
}

// Every rank satisfies all of its own cells, then calls wait_until_any once per cell: fairness
// makes the calls return every index once (no cell starves behind one that stays satisfied);
// wait_until_some returns all of them; wait_until_all returns.
void fair(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx);
  const int cells_n = static_cast<int>(sig.shape()[0]);
  std::vector<Dims> cells;
  for (int c = 0; c < cells_n; ++c) {
    cells.push_back({c});
    system::notify(sig, me, {c}, 1, NotifyOp::Set);
  }
  std::set<std::size_t> got;
  for (int c = 0; c < cells_n; ++c) got.insert(system::wait_until_any(sig, cells, 1, WaitCmp::Eq));
  out(0) = static_cast<std::int32_t>(got.size());
  out(1) = static_cast<std::int32_t>(system::wait_until_some(sig, cells, 1, WaitCmp::Eq).size());
  system::wait_until_all(sig, cells, 1, WaitCmp::Eq);
  out(2) = 1;
}

TEST_P(SignalWaits, WaitUntilAnyDoesNotStarveACell) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  constexpr int kCells = 5;
  auto out = HostTensor<std::int32_t>::zeros({p, 3});
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer({kCells}, DType::INT32, "sig");
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, fair, h.window<std::int32_t>(b, {kCells}), out[r]);
  });
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(out(r, 0), kCells) << "rank " << r << ": wait_until_any skipped a satisfied cell";
    EXPECT_EQ(out(r, 1), kCells) << "rank " << r;
    EXPECT_EQ(out(r, 2), 1) << "rank " << r;
  }
}

// Every rank Sets s + 1 into cell [me] of rank s after writing a row of data there; every rank
// waits for all its cells with the per-cell form (cell [w] expects its own rank + 1 ... written
// by rank w), then checks every row. wait_until_some then serves the same cells again, each
// index exactly once across its calls.
void all_and_some(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> bad) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  const Index len = data.shape()[1];
  Tile<std::int32_t> t({1, len});
  for (Index i = 0; i < len; ++i) t(0, i) = me * 100 + static_cast<int>(i);
  for (int s = 0; s < n; ++s) {
    tile::remote_store(t, data, s, {me, 0});
    system::notify(sig, s, {me}, s + 1, NotifyOp::Set);
  }
  std::vector<Dims> cells;
  for (int w = 0; w < n; ++w) cells.push_back({w});
  system::wait_until_all(sig, cells, std::vector<std::int32_t>(static_cast<std::size_t>(n), me + 1), WaitCmp::Eq);
  int wrong = 0;
  for (int w = 0; w < n; ++w) {
    auto got = tile::load(data, {w, 0}, {1, len});
    for (Index i = 0; i < len; ++i) wrong += got(0, i) != w * 100 + static_cast<int>(i);
  }
  std::vector<std::int32_t> expected(static_cast<std::size_t>(n), me + 1);
  std::vector<int> times(static_cast<std::size_t>(n), 0);
  for (int left = n; left > 0;) {
    const std::vector<std::size_t> some = system::wait_until_some(sig, cells, expected, WaitCmp::Eq);
    wrong += some.empty() || !std::is_sorted(some.begin(), some.end());
    for (std::size_t i : some) {
      ++times[i];
      expected[i] = -1;  // served: never satisfied again
      --left;
    }
  }
  for (int c : times) wrong += c != 1;
  bad(0) = wrong;
}

TEST_P(SignalWaits, WaitUntilAllAndSomePerCellExpected) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  auto bad = HostTensor<std::int32_t>::zeros({p, 1});
  run(ranks(p), [&](Host& h) {
    const int n = h.world_size();
    auto d = h.alloc_window_buffer({n, 33}, DType::INT32, "data");
    auto s = h.alloc_window_buffer({n}, DType::INT32, "sig");
    for (int r = 0; r < n; ++r)
      h.dispatch(r, all_and_some, h.window<std::int32_t>(d, {n, 33}), h.window<std::int32_t>(s, {n}), bad[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(bad(r, 0), 0) << "rank " << r;
}

// Rank 0 waits for any of cells nobody writes; rank 1 fails. The failure releases rank 0's wait
// (the job ends with rank 1's error long before the 600 s deadline, or the test's watchdog fails
// it).
void fail_while_waiting(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  if (rank(ctx) == 0)
    system::wait_until_any(sig, std::vector<Dims>{{0}, {1}}, 1, WaitCmp::Ge);
  else
    throw std::runtime_error("rank 1 fails on purpose");
}

TEST(SignalWaitAbort, AFailedRankReleasesAMultiCellWait) {
  PLD_REQUIRE_RANKS(2);
  expect_rank_error(
      [] {
        run(ranks(2, 600), [](Host& h) {
          auto b = h.alloc_window_buffer({2}, DType::INT32, "sig");
          for (int r = 0; r < 2; ++r) h.dispatch(r, fail_while_waiting, h.window<std::int32_t>(b, {2}));
        });
      },
      1, RankFailure::KernelError, "rank 1 fails on purpose");
}

INSTANTIATE_TEST_SUITE_P(P, SignalWaits, ::testing::ValuesIn(rank_counts(1, 8, {5})), rank_count_name);

// ---------------------------------------------------------------------------------------------
// Validation: each misuse is a UsageError naming the operation, the value and the fix.

enum WaitMisuse : int {
  kTestCmp,
  kWaitCmp,
  kAnyCmp,
  kFetchOutside,
  kAnyEmpty,
  kAllEmpty,
  kSomeCellOutside,
  kAnyExpectedSize,
  kAllCellRank,
};

void wait_misuse(DistributedTensor<std::int32_t> sig, int what) {
  const auto bad = static_cast<WaitCmp>(9);
  const std::vector<Dims> none;
  const std::vector<Dims> two = {{0, 0}, {1, 1}};
  switch (what) {
    case kTestCmp: system::test(sig, {0, 0}, 1, bad); break;
    case kWaitCmp: system::wait(sig, {0, 0}, 1, bad); break;
    case kAnyCmp: system::wait_until_any(sig, two, 1, bad); break;
    case kFetchOutside: system::signal_fetch(sig, {2, 0}); break;
    case kAnyEmpty: system::wait_until_any(sig, none, 1, WaitCmp::Ge); break;
    case kAllEmpty: system::wait_until_all(sig, none, std::vector<std::int32_t>{}, WaitCmp::Ge); break;
    case kSomeCellOutside: system::wait_until_some(sig, std::vector<Dims>{{0, 0}, {1, 2}}, 1, WaitCmp::Ge); break;
    case kAnyExpectedSize: system::wait_until_any(sig, two, std::vector<std::int32_t>{1, 2, 3}, WaitCmp::Ge); break;
    case kAllCellRank: system::wait_until_all(sig, std::vector<Dims>{{0}}, 1, WaitCmp::Ge); break;
  }
}

struct WaitCase {
  int what;
  const char* needle;
};

class SignalWaitMisuse : public ::testing::TestWithParam<WaitCase> {};

TEST_P(SignalWaitMisuse, IsAUsageErrorNamingTheFix) {
  PLD_REQUIRE_RANKS(1);
  expect_rank_error(
      [&] {
        run(ranks(1), [&](Host& h) {
          auto b = h.alloc_window_buffer({2, 2}, DType::INT32, "sig");
          h.dispatch(0, wait_misuse, h.window<std::int32_t>(b, {2, 2}), GetParam().what);
        });
      },
      0, RankFailure::KernelError, GetParam().needle);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SignalWaitMisuse,
    ::testing::Values(
        WaitCase{kTestCmp, "test(signal 'sig', offsets [0, 0]): cmp 9 is not a WaitCmp; pass WaitCmp::Eq"},
        WaitCase{kWaitCmp, "wait(signal 'sig', offsets [0, 0]): cmp 9 is not a WaitCmp"},
        WaitCase{kAnyCmp, "wait_until_any(signal 'sig', 2 cells): cmp 9 is not a WaitCmp"},
        WaitCase{kFetchOutside, "signal_fetch(signal 'sig', offsets [2, 0])"},
        WaitCase{kAnyEmpty, "wait_until_any(signal 'sig', 0 cells): the cell list is empty; pass the offsets"},
        WaitCase{kAllEmpty, "wait_until_all(signal 'sig', 0 cells): the cell list is empty"},
        WaitCase{kSomeCellOutside, "wait_until_some(signal 'sig', 2 cells): cell #1 (offsets [1, 2])"},
        WaitCase{kAnyExpectedSize,
                 "wait_until_any(signal 'sig', 2 cells): 3 expected values for 2 cells; pass one expected value "
                 "per cell"},
        WaitCase{kAllCellRank, "wait_until_all(signal 'sig', 1 cell): cell #0 (offsets [0])"}),
    [](const auto& info) { return "case" + std::to_string(info.param.what); });

TEST(SignalWaitMisuse, OutsideAKernelIsAUsageError) {
  const DistributedTensor<std::int32_t> unbound;
  expect_usage_error([&] { system::test(unbound, {0}, 1, WaitCmp::Ge); },
                     "test(signal '?', offsets [0]): called "
                     "outside a kernel");
  expect_usage_error([&] { system::signal_fetch(unbound, {0}); }, "called outside a kernel");
  expect_usage_error([&] { system::wait_until_any(unbound, std::vector<Dims>{{0}}, 1, WaitCmp::Ge); },
                     "wait_until_any(signal '?', 1 cell): called outside a kernel");
}

}  // namespace
}  // namespace pld::test
