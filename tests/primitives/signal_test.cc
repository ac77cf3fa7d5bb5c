// notify / wait at P = 1, 2, 3, 4, 8: Set and AtomicAdd, Eq and Ge, negative values, self-peer,
// all-rank contention, and the release/acquire contract (data written before a notify is seen
// after the matching wait).
#include "support.hpp"

namespace pld::test {
namespace {

class Signals : public ::testing::TestWithParam<int> {};

// Every rank sets a distinct value on its right neighbour's cell and waits with Eq for its own.
void ring_set(DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> seen) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  system::notify(sig, right, {0}, 100 + me, NotifyOp::Set);
  system::wait(sig, {0}, 100 + left, WaitCmp::Eq);
  seen(0) = tile::read(sig, {0});
}

TEST_P(Signals, SetEqRing) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  auto seen = HostTensor<std::int32_t>::zeros({p, 1});
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer(sizeof(std::int32_t), "sig");
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, ring_set, h.window<std::int32_t>(b, {1}), seen[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(seen(r, 0), 100 + (r + p - 1) % p) << "rank " << r;
}

// Every rank adds +3 then -1 to cell [me] of every rank, itself included, `rounds` times; each
// cell must reach 2 * rounds per writer, summed over writers.
void add_all(DistributedTensor<std::int32_t> sig, int rounds, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  for (int k = 0; k < rounds; ++k)
    for (int p = 0; p < n; ++p) {
      system::notify(sig, p, {0}, 3, NotifyOp::AtomicAdd);
      system::notify(sig, p, {0}, -1, NotifyOp::AtomicAdd);
    }
  system::wait(sig, {0}, 2 * rounds * n, WaitCmp::Ge);
  system::wait(sig, {0}, 2 * rounds * n, WaitCmp::Eq);  // no overshoot
  out(0) = tile::read(sig, {0});
  (void)me;
}

TEST_P(Signals, AtomicAddContentionWithNegativeValues) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  const int kRounds = test_rounds(500);
  auto out = HostTensor<std::int32_t>::zeros({p, 1});
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer(sizeof(std::int32_t), "counter");
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, add_all, h.window<std::int32_t>(b, {1}), kRounds, out[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(out(r, 0), 2 * kRounds * p);
}

// Producer/consumer: every rank writes a payload into its right neighbour's window, then notifies;
// the neighbour waits and reads the payload. Repeated with monotonically increasing counters.
void handoff(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig, int rounds,
             Tensor<std::int32_t> ok) {
  auto ctx = get_comm_ctx(data);
  const int me = rank(ctx), n = nranks(ctx);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const Index len = data.shape()[1];
  Tile<std::int32_t> t({1, len});
  int good = 1;
  for (int k = 1; k <= rounds; ++k) {
    for (Index i = 0; i < len; ++i) t(0, i) = me * 100000 + k * 100 + static_cast<int>(i % 97);
    tile::remote_store(t, data, right, {k % 2, 0});  // double-buffered slot
    system::notify(sig, right, {0}, 1, NotifyOp::AtomicAdd);
    system::wait(sig, {0}, k, WaitCmp::Ge);
    auto got = tile::load(data, {k % 2, 0}, {1, len});
    for (Index i = 0; i < len; ++i) good &= got(0, i) == left * 100000 + k * 100 + static_cast<int>(i % 97);
    // Tell the writer this slot may be reused two rounds later.
    system::notify(sig, left, {1}, 1, NotifyOp::AtomicAdd);
    system::wait(sig, {1}, k, WaitCmp::Ge);
  }
  ok(0) = good;
}

TEST_P(Signals, ReleaseAcquireHandoff) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  auto ok = HostTensor<std::int32_t>::zeros({p, 1});
  run(ranks(p), [&](Host& h) {
    auto d = h.alloc_window_buffer({2, 1031}, DType::INT32, "data");
    auto s = h.alloc_window_buffer({2}, DType::INT32, "sig");
    for (int r = 0; r < h.world_size(); ++r)
      h.dispatch(r, handoff, h.window<std::int32_t>(d, {2, 1031}), h.window<std::int32_t>(s, {2}), 50, ok[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(ok(r, 0), 1) << "rank " << r;
}

// Negative values and signed comparison: Set -5, then Ge -10 and Eq -5 hold.
void negative(DistributedTensor<std::int32_t> sig) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  system::notify(sig, (me + 1) % n, {me == n - 1 ? 0 : me + 1, 0}, -5, NotifyOp::Set);
  system::wait(sig, {me, 0}, -10, WaitCmp::Ge);
  system::wait(sig, {me, 0}, -5, WaitCmp::Eq);
}

TEST_P(Signals, NegativeValuesCompareSigned) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer({h.world_size(), 1}, DType::INT32, "sig");
    for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, negative, h.window<std::int32_t>(b, {h.world_size(), 1}));
  });
}

// Several dispatches per rank run in program order and see one window across dispatches.
void step(DistributedTensor<std::int32_t> sig, int k) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  for (int p = 0; p < n; ++p) system::notify(sig, p, {me}, 1, NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s) system::wait(sig, {s}, k, WaitCmp::Ge);
}

TEST_P(Signals, ManyDispatchesRunInProgramOrder) {
  PLD_REQUIRE_RANKS(GetParam());
  const int p = GetParam();
  run(ranks(p), [&](Host& h) {
    auto b = h.alloc_window_buffer({h.world_size()}, DType::INT32, "sig");
    for (int k = 1; k <= 20; ++k)
      for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, step, h.window<std::int32_t>(b, {h.world_size()}), k);
  });
}

INSTANTIATE_TEST_SUITE_P(P, Signals, ::testing::ValuesIn(rank_counts(1, 8, {5})), rank_count_name);

}  // namespace
}  // namespace pld::test
