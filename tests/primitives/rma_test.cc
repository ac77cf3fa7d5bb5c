// put / get / remote_store for every dtype, at P = 1, 2, 3, 4, 8, with transfers of 0, 1, an odd
// number and many elements; atomic add under contention from every rank at once.
#include "support.hpp"

#include <cstring>

namespace pld::test {
namespace {

constexpr Index kSizes[] = {0, 1, 37, 65537};

/// A barrier on a fresh signal row: notify every rank at [row, me], wait for every [row, s].
void barrier(const DistributedTensor<std::int32_t>& sig, int row) {
  auto ctx = get_comm_ctx(sig);
  const int me = rank(ctx), n = nranks(ctx);
  for (int p = 0; p < n; ++p) system::notify(sig, p, {row, me}, 1, NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s) system::wait(sig, {row, s}, 1, WaitCmp::Ge);
}

enum Mode : int { kRegion = 0, kChunked = 1, kPipelined = 2, kWindowSource = 3 };

// Rank r puts its row into row r of its right neighbour's [P, N] window; then every rank copies
// its whole window out with a self-get.
template <class T>
void put_ring(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> src, Tensor<T> out, int mode) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  const Index len = win.shape()[1];
  const int right = (me + 1) % n;
  PutOptions opt;
  if (mode == kChunked) opt = PutOptions{.chunk_rows = 1, .chunk_cols = 5};
  if (mode == kPipelined) opt = PutOptions{.chunk_rows = 1, .chunk_cols = 16, .pipeline = true};
  if (mode == kWindowSource) {
    // Stage into my own window row `me` first, then push that window row.
    tensor::put(win, me, src, {me, 0}, {0, 0}, {1, len});
    tensor::put(win, right, win, {me, 0}, {me, 0}, {1, len}, opt);
  } else {
    tensor::put(win, right, src, {me, 0}, {0, 0}, {1, len}, opt);
  }
  barrier(sig, 0);
  tensor::get(out, me, win);
}

class Rma : public ::testing::TestWithParam<TypeAndRanks> {};

TEST_P(Rma, PutRingEveryModeSizeAndRankCount) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    for (int mode : {kRegion, kChunked, kPipelined, kWindowSource}) {
      std::vector<HostTensor<T>> srcs, outs;
      for (Index n : kSizes) {
        auto src = HostTensor<T>::zeros({p, 1, n});
        for (int r = 0; r < p; ++r)
          for (Index i = 0; i < n; ++i) src(r, 0, i) = pattern<T>(r, i);
        srcs.push_back(src);
        outs.push_back(HostTensor<T>::full({p, p, n}, T(static_cast<float>(99))));
      }
      run(ranks(p), [&](Host& h) {
        for (std::size_t k = 0; k < std::size(kSizes); ++k) {
          const Index n = kSizes[k];
          auto w = h.alloc_window_buffer({p, n}, dtype_of<T>);
          auto s = h.alloc_window_buffer({1, p}, DType::INT32);
          for (int r = 0; r < p; ++r)
            h.dispatch(r, put_ring<T>, h.window<T>(w, {p, n}), h.window<std::int32_t>(s, {1, p}), srcs[k][r],
                       outs[k][r], mode);
        }
      });
      for (std::size_t k = 0; k < std::size(kSizes); ++k)
        for (int r = 0; r < p; ++r) {
          const int left = (r + p - 1) % p;
          for (int row = 0; row < p; ++row)
            for (Index i = 0; i < kSizes[k]; ++i) {
              // Row `left` came from the left neighbour; with a window source, my own staging row too.
              const bool staged = mode == kWindowSource && row == r;
              const T expect = row == left ? pattern<T>(left, i) : staged ? pattern<T>(r, i) : T(static_cast<float>(0));
              ASSERT_EQ(value(outs[k](r, row, i)), value(expect)) << "P=" << p << " mode=" << mode << " n=" << kSizes[k]
                                                                  << " rank " << r << " row " << row << " i " << i;
            }
        }
    }
  });
}

// Every rank stages its row in its own window, then gets its left neighbour's (pull), both as a
// full slice into a host tensor and as a region into its own window.
template <class T>
void get_ring(DistributedTensor<T> win, DistributedTensor<T> landing, DistributedTensor<std::int32_t> sig,
              Tensor<T> src, Tensor<T> out, Tensor<T> out2) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  const Index len = win.shape()[1];
  const int left = (me + n - 1) % n;
  tile::store(tile::load(src, {0, 0}, {1, len}), {0, 0}, win);
  barrier(sig, 0);  // the source publishes before the reader gets
  tensor::get(out, left, win, GetOptions{.chunk_rows = 1, .chunk_cols = 7});
  tensor::get(landing, left, win, {1, 0}, {0, 0}, {1, len});
  tensor::get(out2, me, landing);
}

TEST_P(Rma, GetRingFullSliceAndRegion) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    for (Index n : kSizes) {
      auto src = HostTensor<T>::zeros({p, 1, n});
      for (int r = 0; r < p; ++r)
        for (Index i = 0; i < n; ++i) src(r, 0, i) = pattern<T>(r, i);
      auto out = HostTensor<T>::zeros({p, 1, n});
      auto out2 = HostTensor<T>::zeros({p, 2, n});
      run(ranks(p), [&](Host& h) {
        auto w = h.alloc_window_buffer({1, n}, dtype_of<T>, "win");
        auto l = h.alloc_window_buffer({2, n}, dtype_of<T>, "landing");
        auto s = h.alloc_window_buffer({1, p}, DType::INT32, "sig");
        for (int r = 0; r < p; ++r)
          h.dispatch(r, get_ring<T>, h.window<T>(w, {1, n}), h.window<T>(l, {2, n}), h.window<std::int32_t>(s, {1, p}),
                     src[r], out[r], out2[r]);
      });
      for (int r = 0; r < p; ++r) {
        const int left = (r + p - 1) % p;
        for (Index i = 0; i < n; ++i) {
          ASSERT_EQ(value(out(r, 0, i)), value(pattern<T>(left, i))) << "P=" << p << " n=" << n << " rank " << r;
          ASSERT_EQ(value(out2(r, 0, i)), value(T(static_cast<float>(0))));
          ASSERT_EQ(value(out2(r, 1, i)), value(pattern<T>(left, i)));
        }
      }
    }
  });
}

template <class T>
T small_pattern(std::int64_t rank, std::int64_t i) {
  return static_cast<T>(static_cast<float>((rank * 3 + i) % 15));
}

// Every rank adds its values into every rank's window (itself included) at the same time, with
// put(atomic=Add) into row 0 and remote_store(atomic=Add) into row 1.
template <class T>
void atomic_all(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> src, Tensor<T> out) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  const Index len = win.shape()[1];
  const auto t = tile::load(src, {0, 0}, {1, len});
  for (int k = 0; k < n; ++k) {
    const int p = (me + k) % n;  // staggered start, so that every element is contended
    tensor::put(win, p, src, {0, 0}, {0, 0}, {1, len}, PutOptions{.atomic = AtomicType::Add});
    tile::remote_store(t, win, p, {1, 0}, AtomicType::Add);
  }
  barrier(sig, 0);
  tensor::get(out, me, win);
}

class AtomicRma : public ::testing::TestWithParam<TypeAndRanks> {};

TEST_P(AtomicRma, AddFromEveryRankAtOnce) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AtomicTypes{}, GetParam().dtype, [&]<class T>() {
    for (Index n : kSizes) {
      auto src = HostTensor<T>::zeros({p, 1, n});
      for (int r = 0; r < p; ++r)
        for (Index i = 0; i < n; ++i) src(r, 0, i) = small_pattern<T>(r, i);
      auto out = HostTensor<T>::zeros({p, 2, n});
      run(ranks(p), [&](Host& h) {
        auto w = h.alloc_window_buffer({2, n}, dtype_of<T>, "acc");
        auto s = h.alloc_window_buffer({1, p}, DType::INT32, "sig");
        for (int r = 0; r < p; ++r)
          h.dispatch(r, atomic_all<T>, h.window<T>(w, {2, n}), h.window<std::int32_t>(s, {1, p}), src[r], out[r]);
      });
      for (int r = 0; r < p; ++r)
        for (Index i = 0; i < n; ++i) {
          float expect = 0;
          for (int s = 0; s < p; ++s) expect += static_cast<float>(small_pattern<T>(s, i));
          ASSERT_EQ(static_cast<float>(value(out(r, 0, i))), expect) << "put P=" << p << " n=" << n << " rank " << r;
          ASSERT_EQ(static_cast<float>(value(out(r, 1, i))), expect) << "remote_store P=" << p << " n=" << n;
        }
    }
  });
}

// tensor::remote_store: a [1, 1, cols] host tensor lands on the inner two dims of a 3-D window.
template <class T>
void remote_store_3d(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> src, Tensor<T> out) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  const int right = (me + 1) % n;
  tensor::remote_store(src, win, right, {me, 1, 2});
  barrier(sig, 0);
  tensor::get(out, me, win);
}

TEST_P(Rma, TensorRemoteStoreLandsOnInnerDims) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    constexpr Index kCols = 13;
    auto src = HostTensor<T>::zeros({p, 1, 1, kCols});
    for (int r = 0; r < p; ++r)
      for (Index i = 0; i < kCols; ++i) src(r, 0, 0, i) = pattern<T>(r, i);
    auto out = HostTensor<T>::zeros({p, p, 3, kCols + 4});
    run(ranks(p), [&](Host& h) {
      auto w = h.alloc_window_buffer({p, 3, kCols + 4}, dtype_of<T>, "win");
      auto s = h.alloc_window_buffer({1, p}, DType::INT32, "sig");
      for (int r = 0; r < p; ++r)
        h.dispatch(r, remote_store_3d<T>, h.window<T>(w, {p, 3, kCols + 4}), h.window<std::int32_t>(s, {1, p}), src[r],
                   out[r]);
    });
    for (int r = 0; r < p; ++r) {
      const int left = (r + p - 1) % p;
      for (int a = 0; a < p; ++a)
        for (int b = 0; b < 3; ++b)
          for (Index c = 0; c < kCols + 4; ++c) {
            const bool inside = a == left && b == 1 && c >= 2 && c < 2 + kCols;
            const T expect = inside ? pattern<T>(left, c - 2) : T(static_cast<float>(0));
            ASSERT_EQ(value(out(r, a, b, c)), value(expect)) << "P=" << p << " rank " << r;
          }
    }
  });
}

}  // namespace
}  // namespace pld::test

namespace pld::test {
namespace {

// Transfers above the streaming threshold (8 MiB), at an odd size, both directions.
void big_ring(DistributedTensor<std::uint8_t> win, DistributedTensor<std::uint8_t> odd,
              DistributedTensor<std::int32_t> sig, Tensor<std::uint8_t> src, Tensor<std::uint8_t> out,
              Tensor<std::uint8_t> out_odd) {
  const int me = rank(get_comm_ctx(win)), n = nranks(get_comm_ctx(win));
  const Index len = src.numel();
  tensor::put(win, (me + 1) % n, src);  // full slice: the fast path
  const Tensor<std::uint8_t> row(src.data(), {1, len});
  tensor::put(odd, (me + 1) % n, row, {0, 3}, {0, 0}, {1, len});  // misaligned destination
  for (int p = 0; p < n; ++p) system::notify(sig, p, {me}, 1, NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s) system::wait(sig, {s}, 1, WaitCmp::Ge);
  tensor::get(out, (me + 1) % n, win);  // pull what I pushed back, also > 8 MiB
  const Tensor<std::uint8_t> back(out_odd.data(), {1, len});
  tensor::get(back, (me + 1) % n, odd, {0, 0}, {0, 3}, {1, len});
}

TEST(Rma, LargeTransfersOverTheStreamingThreshold) {
  PLD_REQUIRE_RANKS(2);
  constexpr Index kLen = (9 << 20) + 13;
  auto src = HostTensor<std::uint8_t>::zeros({2, kLen});
  for (int r = 0; r < 2; ++r)
    for (Index i = 0; i < kLen; ++i) src(r, i) = static_cast<std::uint8_t>((i * 7 + r * 31) % 251);
  auto out = HostTensor<std::uint8_t>::zeros({2, kLen});
  auto out_odd = HostTensor<std::uint8_t>::zeros({2, kLen});
  run(ranks(2), [&](Host& h) {
    auto w = h.window<std::uint8_t>(h.alloc_window_buffer({kLen}, DType::UINT8, "big"), {kLen});
    auto o = h.window<std::uint8_t>(h.alloc_window_buffer({1, kLen + 3}, DType::UINT8, "odd"), {1, kLen + 3});
    auto s = h.window<std::int32_t>(h.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
    for (int r = 0; r < 2; ++r) h.dispatch(r, big_ring, w, o, s, src[r], out[r], out_odd[r]);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(std::memcmp(out[r].data(), src[r].data(), kLen), 0) << "rank " << r;
    ASSERT_EQ(std::memcmp(out_odd[r].data(), src[r].data(), kLen), 0) << "misaligned, rank " << r;
  }
}

// Rank 0 fails at once while every other rank has a get from it, a put to it and a notify to it
// in flight: the call fails on rank 0 and leaves none of that traffic behind.
void fail_under_traffic(DistributedTensor<std::int32_t> win, DistributedTensor<std::int32_t> sig) {
  const int me = rank(get_comm_ctx(win));
  if (me == 0) throw Error("rank 0 fails on purpose");
  const Index len = win.shape()[1];
  static std::vector<std::int32_t> local(static_cast<std::size_t>(len), 7);  // may outlive the kernel
  const Tensor<std::int32_t> buf(local.data(), {1, len});
  tensor::get(buf, 0, win);
  tensor::put(win, 0, buf);
  system::notify(sig, 0, {0, me}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {0, 0}, 1, WaitCmp::Ge);  // never satisfied: released by rank 0's failure
}

// Every rank stages its row, then gets its left neighbour's one element at a time.
void get_each(DistributedTensor<std::int32_t> win, DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> src,
              Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  tile::store(tile::load(src, {0, 0}, {1, win.shape()[1]}), {0, 0}, win);
  barrier(sig, 0);
  tensor::get(out, (me + n - 1) % n, win, GetOptions{.chunk_rows = 1, .chunk_cols = 1});
}

class RmaAfterFailure : public ::testing::TestWithParam<int> {};

// The calls after failed ones see exact data: more single-element gets than the mpi backend has
// reply tags (32766), so a reply left over from a failed call would land in one of them.
TEST_P(RmaAfterFailure, GetsSeeExactDataAfterFailedCallsWithTrafficInFlight) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  constexpr Index kLen = 40000;
  auto src = HostTensor<std::int32_t>::zeros({p, 1, kLen});
  for (int r = 0; r < p; ++r)
    for (Index i = 0; i < kLen; ++i) src(r, 0, i) = static_cast<std::int32_t>(r * 1000003 + i);
  for (int round = 0; round < 3; ++round)
    expect_rank_error(
        [&] {
          run(ranks(p), [&](Host& h) {
            auto w = h.window<std::int32_t>(h.alloc_window_buffer({1, kLen}, DType::INT32, "win"), {1, kLen});
            auto s = h.window<std::int32_t>(h.alloc_window_buffer({1, p}, DType::INT32, "sig"), {1, p});
            for (int r = 0; r < p; ++r) h.dispatch(r, fail_under_traffic, w, s);
          });
        },
        0, RankFailure::KernelError, "rank 0 fails on purpose");
  auto out = HostTensor<std::int32_t>::zeros({p, 1, kLen});
  run(ranks(p), [&](Host& h) {
    auto w = h.window<std::int32_t>(h.alloc_window_buffer({1, kLen}, DType::INT32, "win"), {1, kLen});
    auto s = h.window<std::int32_t>(h.alloc_window_buffer({1, p}, DType::INT32, "sig"), {1, p});
    for (int r = 0; r < p; ++r) h.dispatch(r, get_each, w, s, src[r], out[r]);
  });
  for (int r = 0; r < p; ++r)
    for (Index i = 0; i < kLen; ++i)
      ASSERT_EQ(out(r, 0, i), src((r + p - 1) % p, 0, i)) << "P=" << p << " rank " << r << " element " << i;
}

INSTANTIATE_TEST_SUITE_P(P, RmaAfterFailure, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

INSTANTIATE_TEST_SUITE_P(P, Rma, ::testing::ValuesIn(every_type_and_ranks(rank_counts(1, 8, {5}))),
                         type_and_ranks_name);
INSTANTIATE_TEST_SUITE_P(P, AtomicRma, ::testing::ValuesIn(types_and_ranks(AtomicTypes{}, rank_counts(1, 8, {5}))),
                         type_and_ranks_name);

}  // namespace
}  // namespace pld::test
