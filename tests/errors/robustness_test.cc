// Arguments near the integer limits, handmade views and other calls that once got past pld's
// checks: each is refused with a pld::Error naming the operation and the value (never a wrapped
// size), leaves the neighbouring buffers as they were, or — where the call is valid — works.
#include "support.hpp"

#include <climits>
#include <cstring>

namespace pld::test {
namespace {

constexpr Index kMax = INT64_MAX;
constexpr const char* kMaxText = "9223372036854775807";

// ---- window views whose size overflows ---------------------------------------------------------

TEST(Robustness, WindowWhoseByteSizeOverflowsIsRefused) {
  expect_usage_error(
      [] {
        run(ranks(1), [](Host& h) {
          auto small = h.alloc_window_buffer(16, "small");
          h.window<float>(small, {(Index{1} << 62) + 1, 4});
        });
      },
      "window('small', [4611686018427387905, 4], fp32): the view's size overflows int64");
}

TEST(Robustness, AllocWindowBufferWhoseByteSizeOverflowsIsRefused) {
  expect_usage_error([] { run(ranks(1), [](Host& h) {
                            h.alloc_window_buffer({Index{1} << 62, 4}, DType::INT32);
                          }); },
                     "alloc_window_buffer([4611686018427387904, 4], int32): shape [4611686018427387904, 4] has more "
                     "elements than int64 can count");
}

TEST(Robustness, HostTensorAndTensorWhoseSizeOverflowsAreRefused) {
  expect_usage_error(
      [] {
        HostTensor<float> t({Index{1} << 32, Index{1} << 32});
      },
      "HostTensor: shape [4294967296, 4294967296] has more elements than int64 can count");
  expect_usage_error(
      [] {
        HostTensor<double> t({Index{1} << 31, Index{1} << 30});
      },
      "HostTensor: shape [2147483648, 1073741824] of 8-byte elements needs more bytes");
  float one = 0;
  expect_usage_error([&] { Tensor<float>(&one, {(Index{1} << 62) + 1, 4}); }, "Tensor: shape [4611686018427387905, 4]");
}

// ---- boxes whose offset + extent overflows -------------------------------------------------------

TEST(Robustness, TileOffsetNearInt64MaxIsOutsideTheTensor) {
  auto h = HostTensor<float>::zeros({3, 4});
  const Tensor<float> mid = h[1];  // rows 0 and 2 are guards
  expect_usage_error([&] { tile::store(tile::full<float>({1}, 7.f), {kMax}, mid); },
                     std::string("tile::store: dst box exceeds dimension 0: offset ") + kMaxText + " + extent 1 > 4");
  expect_usage_error([&] { tile::load(mid, {kMax}, {1}); },
                     std::string("tile::load: src box exceeds dimension 0: offset ") + kMaxText + " + extent 1 > 4");
  expect_usage_error([&] { tile::load(mid, {1}, {kMax}, {kMax}); },
                     std::string("tile::load: shape [") + kMaxText + "] of 4-byte elements needs more bytes");
  for (float v : h.to_vector()) EXPECT_EQ(v, 0.f);
}

TEST(Robustness, TileShapeWhoseCountOverflowsIsRefused) {
  auto src = HostTensor<float>::arange({4, 4});
  expect_usage_error(
      [&] {
        tile::load(src.view(), {0, 0}, {Index{1} << 32, Index{1} << 32}, {2, 4});
      },
      "tile::load: shape [4294967296, 4294967296] has more elements than int64 can count");
  expect_usage_error(
      [&] {
        tile::load(src.view(), {0, 0}, {(Index{1} << 62) + 1, 4}, {4, 4});
      },
      "tile::load: shape [4611686018427387905, 4] has more elements than int64 can count");
  expect_usage_error(
      [] {
        Tile<float>({Index{1} << 40, Index{1} << 20});
      },
      "Tile: tile shape [1099511627776, 1048576] needs 4611686018427387904 bytes, more than this "
      "machine's memory");
}

TEST(Robustness, TileBoxIsCheckedBeforeTheTileIsAllocated) {
  // A [2^28, 4] fp32 tile takes 4 GiB: the box check refuses the call before it is allocated.
  auto src = HostTensor<float>::zeros({4, 4});
  expect_usage_error(
      [&] {
        tile::load(src.view(), {5, 0}, {Index{1} << 28, 4}, {1, 4});
      },
      "tile::load: src box exceeds dimension 0: offset 5 + extent 1 > 4");
}

// ---- rank-side writes that must stay inside their window -----------------------------------------

// Rank 0 makes `what` (an out-of-range put or notify), catching the UsageError; rank 1 then copies
// its 'prev' buffer (allocated just before the target) to `out`. ok[0] = 1 when the error named
// the offset.
void out_of_window(DistributedTensor<float> prev, DistributedTensor<float> dst, DistributedTensor<std::int32_t> sig,
                   DistributedTensor<std::int32_t> bar, Tensor<float> out, Tensor<std::int32_t> ok, int what) {
  const int me = rank(get_comm_ctx(dst));
  if (me == 0) {
    try {
      auto one = HostTensor<float>::full({1}, 99.f);
      if (what == 0) tensor::put(dst, 1, Tensor<float>(one.data(), {1}), {kMax}, {0}, {1});
      if (what == 1) system::notify(sig, 1, {0, kMax}, 12345, NotifyOp::AtomicAdd);
    } catch (const UsageError& e) {
      ok.data()[0] = std::string(e.what()).find(kMaxText) != std::string::npos;
    }
  }
  tensor::barrier(bar);
  if (me == 1) tile::store(tile::load(prev, {0}, {16}), {0}, out);
}

TEST(Robustness, PutAndNotifyAtOffsetInt64MaxLeaveThePeersPreviousBufferAlone) {
  PLD_REQUIRE_RANKS(2);
  for (int what = 0; what < 2; ++what) {
    auto out = HostTensor<float>::full({16}, -1.f);
    auto ok = HostTensor<std::int32_t>::zeros({1});
    run(ranks(2), [&](Host& h) {
      auto prev = h.alloc_window_buffer(64, "prev");
      auto dst = h.alloc_window_buffer(64, "dst");
      auto sig = h.alloc_window_buffer({2, 16}, DType::INT32, "sig");
      auto bar = h.alloc_window_buffer({2, 16}, DType::INT32, "bar");
      for (int r = 0; r < 2; ++r)
        h.dispatch(r, out_of_window, h.window<float>(prev, {16}), h.window<float>(dst, {16}),
                   h.window<std::int32_t>(sig, {2, 16}), h.window<std::int32_t>(bar, {2, 16}), out.view(), ok.view(),
                   what);
    });
    EXPECT_EQ(ok.at({0}), 1) << "case " << what << ": no UsageError naming the offset";
    for (float v : out.to_vector()) EXPECT_EQ(v, 0.f) << "case " << what << ": rank 1's 'prev' buffer was written";
  }
}

void remote_store_at(DistributedTensor<float> w, Index row) {
  tile::remote_store(tile::full<float>({1, 4}, 42.f), w, 0, {row, 0});
}

TEST(Robustness, RemoteStoreAtRowInt64MaxIsRefusedOnTheRank) {
  expect_rank_error(
      [] {
        run(ranks(1), [](Host& h) {
          auto b = h.alloc_window_buffer(64, "b");
          h.dispatch(0, remote_store_at, h.window<float>(b, {4, 4}), kMax);
        });
      },
      0, RankFailure::KernelError, std::string("target box exceeds dimension 0: offset ") + kMaxText);
}

// ---- window views made with DistributedTensor's constructor --------------------------------------

void store_row(DistributedTensor<float> v) {
  tile::remote_store(tile::full<float>({1, 4}, 1.f), v, 0, {0, 0});
}

TEST(Robustness, HandmadeWindowViewsAreCheckedAtDispatch) {
  struct Case {
    int mode;
    const char* needle;
  };
  for (const Case c : {Case{0, "a window view of comm domain 1000, which this call did not create"},
                       Case{1, "a window view of buffer 1000"},
                       Case{2,
                            "a window view of buffer 0 (offset 1099511627776, 64 bytes) that comm domain world "
                            "does not have"},
                       Case{3,
                            "window view of 'b' with shape [1, 67108864] (fp32): the view needs 268435456 bytes "
                            "but the buffer has 64 bytes"}}) {
    expect_usage_error(
        [&] {
          run(ranks(1), [&](Host& h) {
            auto b = h.alloc_window_buffer(64, "b");
            auto ref = b.ref;
            Dims shape{1, 16};
            if (c.mode == 0) ref.domain = 1000;
            if (c.mode == 1) ref.buffer = 1000;
            if (c.mode == 2) ref.offset = std::uint64_t{1} << 40;
            if (c.mode == 3) shape = {1, 1 << 26};
            h.dispatch(0, store_row, detail::Access::make<DistributedTensor<float>>(ref, shape));
          });
        },
        std::string("Host::dispatch: ") + c.needle);
  }
}

TEST(Robustness, HandmadeWindowViewsAreCheckedByHostCollectives) {
  expect_usage_error(
      [] {
        run(ranks(1), [](Host& h) {
          auto b = h.alloc_window_buffer(64, "b");
          auto ref = b.ref;
          ref.domain = 1000;
          h.barrier(detail::Access::make<DistributedTensor<std::int32_t>>(ref, Dims{1, 16}));
        });
      },
      "host collective: a window view of comm domain 1000");
}

// A view built inside the kernel is checked against its buffer in debug mode (PLD_DEBUG=1).
void store_through_huge_view(DistributedTensor<float> v) {
  const auto huge = detail::Access::make<DistributedTensor<float>>(v.ref(), Dims{(Index{1} << 62) + 1, 4}, v.state());
  tile::remote_store(tile::full<float>({1, 4}, 42.f), huge, 0, {4, 0});
}

TEST(Robustness, KernelMadeViewWhoseSizeOverflowsFailsInDebugMode) {
  PLD_REQUIRE_SHM();
  ScopedEnv debug("PLD_DEBUG", "1");
  expect_rank_error(
      [] {
        run(ranks(1), [](Host& h) {
          auto b = h.alloc_window_buffer(16, "small");
          h.dispatch(0, store_through_huge_view, h.window<float>(b, {4}));
        });
      },
      0, RankFailure::KernelError,
      "has shape [4611686018427387905, 4] (fp32, more bytes than int64 can count) but the buffer has 16 bytes");
}

// ---- valid calls that once failed ------------------------------------------------------------------

void scalar_copies(DistributedTensor<float> a, DistributedTensor<float> b, DistributedTensor<float> c,
                   Tensor<float> out) {
  tile::write(a, {}, 5.f);
  tensor::get(b, 0, a, GetOptions{.chunk_rows = 2});
  tensor::put(c, 0, b, PutOptions{.chunk_rows = 2, .chunk_cols = 1});
  out.data()[0] = tile::read(b, {});
  out.data()[1] = tile::read(c, {});
}

TEST(Robustness, ChunkedGetAndPutBetweenZeroDimensionalViews) {
  auto out = HostTensor<float>::zeros({2});
  run(ranks(1), [&](Host& h) {
    auto a = h.alloc_window_buffer(64, "a");
    auto b = h.alloc_window_buffer(64, "b");
    auto c = h.alloc_window_buffer(64, "c");
    h.dispatch(0, scalar_copies, h.window<float>(a, {}), h.window<float>(b, {}), h.window<float>(c, {}), out.view());
  });
  EXPECT_EQ(out.at({0}), 5.f);
  EXPECT_EQ(out.at({1}), 5.f);
}

// (-1) * 0 is -0.0 in IEEE arithmetic: every float type's Prod keeps the sign, at every size (the
// 13-element rows take the short-vector path, 64 elements the dispatched one).
template <class T>
void prod_of_signs(DistributedTensor<T> t, DistributedTensor<std::int32_t> s, Tensor<std::int64_t> out, int which) {
  const int me = rank(get_comm_ctx(t));
  const Index cols = t.shape()[1];
  for (Index i = 0; i < 2 * cols; ++i) tile::write(t, {i / cols, i % cols}, T(me == 0 ? -1.0f : 0.0f));
  tensor::barrier(s);
  if (which == 0)
    tensor::reduce_scatter(t, s, {.op = ReduceOp::Prod});
  else
    tensor::allreduce(t, s, {.op = ReduceOp::Prod});
  for (Index i = 0; i < cols; ++i) {
    T v = tile::read(t, {me, i});
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    out.data()[me * cols + i] = static_cast<std::int64_t>(bits);
  }
}

template <class T>
class ProdSign : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, fp16, bf16, double>;
TYPED_TEST_SUITE(ProdSign, FloatTypes, TypeNames);

TYPED_TEST(ProdSign, MinusOneTimesZeroIsNegativeZero) {
  PLD_REQUIRE_RANKS(2);
  using T = TypeParam;
  const T ref = T(-1.0f * 0.0f);
  std::uint64_t want = 0;
  std::memcpy(&want, &ref, sizeof ref);
  for (Index cols : {Index{13}, Index{64}})
    for (int which = 0; which < 2; ++which) {
      auto out = HostTensor<std::int64_t>::zeros({2, cols});
      run(ranks(2), [&](Host& h) {
        auto b = h.alloc_window_buffer({2, cols}, dtype_of<T>, "t");
        auto s = h.alloc_window_buffer({2, 16}, DType::INT32, "s");
        for (int r = 0; r < 2; ++r)
          h.dispatch(r, prod_of_signs<T>, h.window<T>(b, {2, cols}), h.window<std::int32_t>(s, {2, 16}), out.view(),
                     which);
      });
      for (std::int64_t bits : out.to_vector())
        EXPECT_EQ(static_cast<std::uint64_t>(bits), want)
            << (which ? "allreduce" : "reduce_scatter") << ", " << cols << " columns";
    }
}

// ---- a heap that cannot be mapped for every rank --------------------------------------------------

void nothing(int) {}

TEST(Robustness, HeapThatCannotBeMappedIsAnErrorNotAnAbort) {
  PLD_REQUIRE_SHM();
  DistributedConfig cfg = ranks(4);
  // 4 x 64 TiB: the first heap maps, a later one exceeds a 47-bit address space.
  cfg.heap_bytes = std::uint64_t{1} << 46;
  try {
    run(cfg, [](Host& h) {
      for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, nothing, 0);
    });
    GTEST_SKIP() << "this machine's address space holds 4 x 64 TiB heaps";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot map the window heap of rank"), std::string::npos) << what;
    EXPECT_EQ(what.find("of rank 0 of 4"), std::string::npos) << "the first heap was expected to map: " << what;
    EXPECT_NE(what.find("70368744177664 bytes per rank"), std::string::npos) << what;
    EXPECT_NE(what.find("DistributedConfig::heap_bytes or PLD_HEAP_BYTES"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace pld::test
