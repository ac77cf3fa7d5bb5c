// Atomics on window cells (pld/atomic.hpp) for int32, int64, uint32 and uint64 at P = 1, 2, 3, 4,
// 5, 8: every rank fetch-adding one cell (exact total, every old value seen once), a
// compare-and-swap spin lock around a non-atomic counter, swap chains, and/or/xor bit patterns,
// the non-fetching forms, release/acquire (data put before an atomic is seen by the rank that
// observes it), atomicity with notify on int32 cells, and the validation errors. No test depends
// on timing: every spin loop ends by a count, never by a clock.
#include "support.hpp"

#include <thread>

namespace pld::test {
namespace {

using AtomicTypes = ::testing::Types<std::int32_t, std::int64_t, std::uint32_t, std::uint64_t>;

class Atomics : public ::testing::TestWithParam<TypeAndRanks> {};

// The cell window [1] of T and the barrier signal [P], allocated with dtype shapes.
template <class T>
DistributedTensor<T> cell_window(Host& h, const char* name, Index n = 1) {
  return h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, name), {n});
}
DistributedTensor<std::int32_t> barrier_signal(Host& h) {
  return h.window<std::int32_t>(h.alloc_window_buffer({h.world_size()}, DType::INT32, "barrier"), {h.world_size()});
}

// Every rank adds 1 to rank 0's cell n times (fetch_add and fetch_inc alternately), keeping the
// old values; then rank 0 reads the total.
template <class T>
void fetch_add_kernel(DistributedTensor<T> cell, DistributedTensor<std::int32_t> sig, int n, Tensor<T> olds,
                      Tensor<T> total) {
  for (int k = 0; k < n; ++k)
    olds(k) = k % 2 ? system::atomic_fetch_inc(cell, 0, {0}) : system::atomic_fetch_add(cell, 0, {0}, T(1));
  tensor::barrier(sig);
  if (rank(get_comm_ctx(cell)) == 0) total(0) = system::atomic_fetch(cell, 0, {0});
}

TEST_P(Atomics, FetchAddOneCellFromEveryRank) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AtomicTypes{}, GetParam().dtype, [&]<class T>() {
    const int kN = test_rounds(10000);
    auto olds = HostTensor<T>::zeros({p, kN});
    auto total = HostTensor<T>::zeros({p, 1});
    run(ranks(p), [&](Host& h) {
      auto cell = cell_window<T>(h, "cell");
      auto sig = barrier_signal(h);
      for (int r = 0; r < p; ++r) h.dispatch(r, fetch_add_kernel<T>, cell, sig, kN, olds[r], total[r]);
    });
    EXPECT_EQ(total(0, 0), static_cast<T>(p * kN));
    std::vector<T> seen(olds.data(), olds.data() + static_cast<std::size_t>(p) * kN);
    std::sort(seen.begin(), seen.end());
    for (int i = 0; i < p * kN; ++i)
      if (seen[static_cast<std::size_t>(i)] != static_cast<T>(i)) {
        ADD_FAILURE() << "old values are not 0.." << p * kN - 1 << " each once: position " << i << " holds "
                      << +seen[static_cast<std::size_t>(i)];
        break;
      }
  });
}

// A spin lock on rank 0's cell (compare_swap 0 -> me + 1) around a read-modify-write of a plain
// int64 counter on rank 0; released by set, swap or compare_swap in turn.
template <class T>
void lock_kernel(DistributedTensor<T> lock, DistributedTensor<std::int64_t> counter,
                 DistributedTensor<std::int32_t> sig, int n, Tensor<std::int64_t> out) {
  const int me = rank(get_comm_ctx(lock));
  const T mine = static_cast<T>(me + 1);
  std::int64_t wrong = 0;
  for (int k = 0; k < n; ++k) {
    for (T old; (old = system::atomic_compare_swap(lock, 0, {0}, T(0), mine)) != T(0);) {
      wrong += old == mine;  // nobody else may see my own value as the holder but me
      std::this_thread::yield();
    }
    auto v = tile::remote_load(counter, 0, {0, 0}, {1, 1});
    v(0, 0) += 1;
    tile::remote_store(v, counter, 0, {0, 0});
    switch (k % 3) {
      case 0: system::atomic_set(lock, 0, {0}, T(0)); break;
      case 1: wrong += system::atomic_swap(lock, 0, {0}, T(0)) != mine; break;
      default: wrong += system::atomic_compare_swap(lock, 0, {0}, mine, T(0)) != mine; break;
    }
  }
  tensor::barrier(sig);
  out(0) = wrong;
  if (me == 0) out(1) = tile::read(counter, {0, 0});
}

TEST_P(Atomics, CompareSwapSpinLockProtectsAPlainCounter) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AtomicTypes{}, GetParam().dtype, [&]<class T>() {
    const int kN = test_rounds(200);
    auto out = HostTensor<std::int64_t>::zeros({p, 2});
    run(ranks(p), [&](Host& h) {
      auto lock = cell_window<T>(h, "lock");
      auto counter = h.window<std::int64_t>(h.alloc_window_buffer({1, 1}, DType::INT64, "counter"), {1, 1});
      auto sig = barrier_signal(h);
      for (int r = 0; r < p; ++r) h.dispatch(r, lock_kernel<T>, lock, counter, sig, kN, out[r]);
    });
    EXPECT_EQ(out(0, 1), static_cast<std::int64_t>(p) * kN);
    for (int r = 0; r < p; ++r) EXPECT_EQ(out(r, 0), 0) << "rank " << r << " saw a wrong lock holder";
  });
}

// Every rank swaps distinct values into the last rank's cell; the old values and the final value
// together are every value written plus the initial 0, each once.
template <class T>
void swap_kernel(DistributedTensor<T> cell, DistributedTensor<std::int32_t> sig, int n, Tensor<T> olds,
                 Tensor<T> last) {
  auto ctx = get_comm_ctx(cell);
  const int me = rank(ctx), owner = nranks(ctx) - 1;
  for (int k = 0; k < n; ++k) olds(k) = system::atomic_swap(cell, owner, {0}, static_cast<T>(me * n + k + 1));
  tensor::barrier(sig);
  last(0) = system::atomic_fetch(cell, owner, {0});
}

TEST_P(Atomics, SwapChainLosesNoValue) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AtomicTypes{}, GetParam().dtype, [&]<class T>() {
    const int kN = test_rounds(1000);
    auto olds = HostTensor<T>::zeros({p, kN});
    auto last = HostTensor<T>::zeros({p, 1});
    run(ranks(p), [&](Host& h) {
      auto cell = cell_window<T>(h, "cell");
      auto sig = barrier_signal(h);
      for (int r = 0; r < p; ++r) h.dispatch(r, swap_kernel<T>, cell, sig, kN, olds[r], last[r]);
    });
    std::vector<T> all(olds.data(), olds.data() + static_cast<std::size_t>(p) * kN);
    all.push_back(last(0, 0));
    std::sort(all.begin(), all.end());
    for (int i = 0; i <= p * kN; ++i)
      if (all[static_cast<std::size_t>(i)] != static_cast<T>(i)) {
        ADD_FAILURE() << "position " << i << " holds " << +all[static_cast<std::size_t>(i)];
        break;
      }
    for (int r = 0; r < p; ++r) EXPECT_EQ(last(r, 0), last(0, 0));
  });
}

// Bits of rank r: bit r, and on 64-bit cells also bit 63 - r (the upper half).
template <class T>
T pattern(int r) {
  T bits = static_cast<T>(T(1) << r);
  if constexpr (sizeof(T) == 8) bits = static_cast<T>(bits | (T(1) << (63 - r)));
  return bits;
}

// Phases separated by barriers; rank 0 records the cell after each in out[phase]; every rank
// counts old values that contradict its own bits in wrong.
template <class T>
void bits_kernel(DistributedTensor<T> cell, DistributedTensor<std::int32_t> sig, Tensor<T> out,
                 Tensor<std::int64_t> wrong) {
  auto ctx = get_comm_ctx(cell);
  const int me = rank(ctx);
  const T mine = pattern<T>(me);
  std::int64_t bad = 0;
  int phase = 0;
  auto record = [&] {
    tensor::barrier(sig);
    if (me == 0) out(phase) = system::atomic_fetch(cell, 0, {0});
    ++phase;
    tensor::barrier(sig);
  };
  bad += (system::atomic_fetch_or(cell, 0, {0}, mine) & mine) != 0;
  record();  // 0: every pattern
  bad += (system::atomic_fetch_and(cell, 0, {0}, static_cast<T>(~mine)) & mine) != mine;
  record();  // 1: 0
  bad += (system::atomic_fetch_xor(cell, 0, {0}, mine) & mine) != 0;
  bad += (system::atomic_fetch_xor(cell, 0, {0}, mine) & mine) != mine;
  bad += (system::atomic_fetch_xor(cell, 0, {0}, mine) & mine) != 0;
  record();  // 2: every pattern
  system::atomic_xor(cell, 0, {0}, mine);
  record();  // 3: 0
  system::atomic_or(cell, 0, {0}, mine);
  record();  // 4: every pattern
  if (me == 0) system::atomic_set(cell, 0, {0}, static_cast<T>(~T(0)));
  tensor::barrier(sig);
  system::atomic_and(cell, 0, {0}, static_cast<T>(~mine));
  record();  // 5: ~every pattern
  if (me == 0) system::atomic_set(cell, 0, {0}, T(0));
  tensor::barrier(sig);
  system::atomic_add(cell, 0, {0}, T(2));
  system::atomic_inc(cell, 0, {0});
  record();  // 6: 3 per rank
  wrong(0) = bad;
}

TEST_P(Atomics, BitPatternsAndTheNonFetchingForms) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AtomicTypes{}, GetParam().dtype, [&]<class T>() {
    auto out = HostTensor<T>::zeros({p, 8});
    auto wrong = HostTensor<std::int64_t>::zeros({p, 1});
    run(ranks(p), [&](Host& h) {
      auto cell = cell_window<T>(h, "bits");
      auto sig = barrier_signal(h);
      for (int r = 0; r < p; ++r) h.dispatch(r, bits_kernel<T>, cell, sig, out[r], wrong[r]);
    });
    T all = 0;
    for (int r = 0; r < p; ++r) all = static_cast<T>(all | pattern<T>(r));
    const T expect[7] = {all, 0, all, 0, all, static_cast<T>(~all), static_cast<T>(3 * p)};
    for (int i = 0; i < 7; ++i) EXPECT_EQ(out(0, i), expect[i]) << "phase " << i;
    for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "rank " << r;
  });
}

// Release / acquire: each producer puts a row into rank 0's data window, then increments rank 0's
// flag; rank 0 polls the flag with atomic_fetch and then reads every row. Rounds are paced by
// notify / wait so that a producer never overwrites a row rank 0 has not checked.
template <class T>
void handoff_kernel(DistributedTensor<T> flag, DistributedTensor<std::int32_t> data,
                    DistributedTensor<std::int32_t> ack, int rounds, Tensor<std::int64_t> bad) {
  auto ctx = get_comm_ctx(flag);
  const int me = rank(ctx), n = nranks(ctx);
  const Index len = data.shape()[1];
  std::int64_t wrong = 0;
  for (int k = 1; k <= rounds; ++k) {
    if (me != 0) {
      Tile<std::int32_t> row({1, len});
      for (Index i = 0; i < len; ++i) row(0, i) = me * 1000000 + k * 1000 + static_cast<int>(i);
      tile::remote_store(row, data, 0, {me, 0});
      system::atomic_inc(flag, 0, {0});
      system::wait(ack, {0}, k, WaitCmp::Ge);
      continue;
    }
    while (system::atomic_fetch(flag, 0, {0}) != static_cast<T>(k * (n - 1))) std::this_thread::yield();
    for (int r = 1; r < n; ++r) {
      auto got = tile::load(data, {r, 0}, {1, len});
      for (Index i = 0; i < len; ++i) wrong += got(0, i) != r * 1000000 + k * 1000 + static_cast<int>(i);
    }
    for (int r = 1; r < n; ++r) system::notify(ack, r, {0}, 1, NotifyOp::AtomicAdd);
  }
  bad(0) = wrong;
}

TEST_P(Atomics, DataPutBeforeAnAtomicIsSeenAfterIt) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AtomicTypes{}, GetParam().dtype, [&]<class T>() {
    constexpr int kRounds = 50;
    constexpr Index kLen = 600;  // a few KiB per row: more than one cache line, more than one message
    auto bad = HostTensor<std::int64_t>::zeros({p, 1});
    run(ranks(p), [&](Host& h) {
      auto flag = cell_window<T>(h, "flag");
      auto data = h.window<std::int32_t>(h.alloc_window_buffer({p, kLen}, DType::INT32, "data"), {p, kLen});
      auto ack = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "ack"), {1});
      for (int r = 0; r < p; ++r) h.dispatch(r, handoff_kernel<T>, flag, data, ack, kRounds, bad[r]);
    });
    EXPECT_EQ(bad(0, 0), 0) << "rank 0 read rows older than the atomic it observed";
  });
}

INSTANTIATE_TEST_SUITE_P(P, Atomics, ::testing::ValuesIn(types_and_ranks(AtomicTypes{}, rank_counts())),
                         type_and_ranks_name);

class AtomicSignals : public ::testing::TestWithParam<int> {};

// On an int32 cell atomics, notify and put with AtomicType::Add are atomic with each other, and an
// atomic wakes a rank waiting on the cell.
void mixed_kernel(DistributedTensor<std::int32_t> sig, int n, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(sig);
  const Tile<std::int32_t> one = tile::full<std::int32_t>({1, 1}, 1);
  for (int k = 0; k < n; ++k) {
    system::notify(sig, 0, {0, 0}, 1, NotifyOp::AtomicAdd);
    system::atomic_fetch_add(sig, 0, {0, 0}, 1);
    system::atomic_inc(sig, 0, {0, 0});
    tile::remote_store(one, sig, 0, {0, 0}, AtomicType::Add);
  }
  if (rank(ctx) != 0) return;
  system::wait(sig, {0, 0}, 4 * n * nranks(ctx), WaitCmp::Ge);
  out(0) = system::atomic_fetch(sig, 0, {0, 0});
}

TEST_P(AtomicSignals, AtomicsNotifyAndAtomicPutsOnOneInt32Cell) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  const int kN = test_rounds(500);
  auto out = HostTensor<std::int32_t>::zeros({p, 1});
  run(ranks(p), [&](Host& h) {
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({1, 1}, DType::INT32, "sig"), {1, 1});
    for (int r = 0; r < p; ++r) h.dispatch(r, mixed_kernel, sig, kN, out[r]);
  });
  EXPECT_EQ(out(0, 0), 4 * kN * p);
}

INSTANTIATE_TEST_SUITE_P(P, AtomicSignals, ::testing::ValuesIn(rank_counts()), rank_count_name);

// Misuse: rank 1 fails with a named UsageError while rank 0 waits on a cell nobody writes (it
// must be released).
enum AtomicMisuse : int { kFloatCell, kInt8Cell, kPeerOutside, kCellOutside, kOffsetsRank, kUnboundView, kMisaligned };

void atomic_misuse(DistributedTensor<std::int32_t> sig, DistributedTensor<float> f32, DistributedTensor<std::int8_t> i8,
                   DistributedTensor<std::int64_t> cells, int what) {
  if (rank(get_comm_ctx(sig)) == 0) {
    system::wait(sig, {0}, 1, WaitCmp::Ge);
    return;
  }
  switch (what) {
    case kFloatCell: system::atomic_fetch_add(f32, 0, {0}, 1.0f); break;
    case kInt8Cell: system::atomic_inc(i8, 0, {0}); break;
    case kPeerOutside: system::atomic_swap(cells, 2, {0}, std::int64_t{1}); break;
    case kCellOutside: system::atomic_compare_swap(cells, 0, {4}, std::int64_t{0}, std::int64_t{1}); break;
    case kOffsetsRank: system::atomic_fetch(cells, 0, {0, 0}); break;
    case kUnboundView: system::atomic_set(DistributedTensor<std::int64_t>{}, 0, {0}, std::int64_t{1}); break;
    case kMisaligned: {  // a view 4 bytes into the buffer (only pld's own plumbing can make one)
      detail::WindowRef ref = cells.ref();
      ref.offset += 4;
      const auto shifted = detail::Access::make<DistributedTensor<std::int64_t>>(ref, Dims{2}, cells.state());
      system::atomic_fetch_or(shifted, 0, {1}, std::int64_t{1});
      break;
    }
  }
}

struct MisuseCase {
  int what;
  const char* needle;
};

class AtomicErrors : public ::testing::TestWithParam<MisuseCase> {};

TEST_P(AtomicErrors, RaiseANamedErrorAndReleaseThePeer) {
  PLD_REQUIRE_RANKS(2);
  const MisuseCase c = GetParam();
  expect_rank_error(
      [&] {
        run(ranks(2, 600), [&](Host& h) {
          auto s = h.alloc_window_buffer({1}, DType::INT32, "sig");
          auto f = h.alloc_window_buffer({4}, DType::FP32, "f32");
          auto b = h.alloc_window_buffer({4}, DType::INT8, "i8");
          auto w = h.alloc_window_buffer({4}, DType::INT64, "cells");
          for (int r = 0; r < 2; ++r)
            h.dispatch(r, atomic_misuse, h.window<std::int32_t>(s, {1}), h.window<float>(f, {4}),
                       h.window<std::int8_t>(b, {4}), h.window<std::int64_t>(w, {4}), c.what);
        });
      },
      1, RankFailure::KernelError, c.needle);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AtomicErrors,
    ::testing::Values(MisuseCase{kFloatCell, "atomic_fetch_add(window 'f32', offsets [0]): dtype fp32 has no atomics"},
                      MisuseCase{kInt8Cell, "atomic_inc(window 'i8', offsets [0]): dtype int8 has no atomics"},
                      MisuseCase{kPeerOutside, "atomic_swap(window 'cells', offsets [0]): peer 2 out of range [0, 2)"},
                      MisuseCase{kCellOutside, "window cell exceeds dimension 0: offset 4 + extent 1 > 4"},
                      MisuseCase{kOffsetsRank, "window offsets [0, 0] have rank 2 but the window has rank 1"},
                      MisuseCase{kUnboundView, "the window view is not bound to a comm domain"},
                      MisuseCase{kMisaligned, "not a multiple of 8 (int64); atomics need naturally aligned cells"}),
    [](const auto& info) { return "case" + std::to_string(info.param.what); });

TEST(AtomicErrors, OutsideAKernel) {
  PLD_REQUIRE_SHM();
  expect_usage_error(
      [] {
        run(ranks(1), [](Host& h) {
          auto cell = h.window<std::uint64_t>(h.alloc_window_buffer({1}, DType::UINT64, "cell"), {1});
          system::atomic_fetch_add(cell, 0, {0}, std::uint64_t{1});
        });
      },
      "atomic_fetch_add");
}

}  // namespace
}  // namespace pld::test
