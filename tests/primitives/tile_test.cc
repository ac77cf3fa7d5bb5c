// Tile operations for every dtype: load/store, element read/write, add/sub/mul/max/min, and
// remote_load with a valid_shape that stops short of the window's end.
#include "support.hpp"

namespace pld::test {
namespace {

constexpr Index kRows = 5, kCols = 19;

// Golden arithmetic, independent of pld's: integers in int64 then wrapped to T, floating point in
// float (double for fp64), NaN-free inputs.
template <class T>
T combine(int op, T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    const std::int64_t a = x, b = y;
    const std::int64_t r = op == 0   ? a + b
                           : op == 1 ? a - b
                           : op == 2 ? a * b
                           : op == 3 ? std::max(a, b)
                                     : std::min(a, b);
    return static_cast<T>(r);
  } else {
    using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const F a = static_cast<F>(x), b = static_cast<F>(y);
    const F r = op == 0 ? a + b : op == 1 ? a - b : op == 2 ? a * b : op == 3 ? std::max(a, b) : std::min(a, b);
    return static_cast<T>(r);
  }
}

template <class T>
void tile_ops(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> a, Tensor<T> b, Tensor<T> out) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  const auto ta = tile::load(a, {0, 0}, {kRows, kCols});
  const auto tb = tile::load(b, {0, 0}, {kRows, kCols});
  tile::store(tile::add(ta, tb), {0, 0, 0}, out);
  tile::store(tile::sub(ta, tb), {1, 0, 0}, out);
  tile::store(tile::mul(ta, tb), {2, 0, 0}, out);
  tile::store(tile::max(ta, tb), {3, 0, 0}, out);
  tile::store(tile::min(ta, tb), {4, 0, 0}, out);
  // Element access: out[5] = a transposed in place where it fits (read + write).
  for (Index r = 0; r < kRows; ++r)
    for (Index c = 0; c < kRows; ++c) tile::write(out, {5, r, c}, tile::read(a, {c, r}));
  // Publish a in my window, then read a window of the left neighbour's that overhangs the end:
  // the requested box is [kRows, kCols] at (1, 2); only [kRows - 1, kCols - 2] is valid.
  tile::store(ta, {0, 0}, win);
  for (int p = 0; p < n; ++p) system::notify(sig, p, {me}, 1, NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s) system::wait(sig, {s}, 1, WaitCmp::Ge);
  const int left = (me + n - 1) % n;
  const auto t = tile::remote_load(win, left, {1, 2}, {kRows, kCols}, {kRows - 1, kCols - 2});
  tile::store(t, {6, 0, 0}, out);
}

class Tiles : public ::testing::TestWithParam<TypeAndRanks> {};

TEST_P(Tiles, ElementwiseLoadStoreAndRemoteLoad) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    auto a = HostTensor<T>::zeros({p, kRows, kCols});
    auto b = HostTensor<T>::zeros({p, kRows, kCols});
    for (int r = 0; r < p; ++r)
      for (Index i = 0; i < kRows; ++i)
        for (Index j = 0; j < kCols; ++j) {
          a(r, i, j) = pattern<T>(r, i * kCols + j);
          b(r, i, j) = pattern<T>(r + 3, i * kCols + j + 5);
        }
    auto out = HostTensor<T>::zeros({p, 7, kRows, kCols});
    run(ranks(p), [&](Host& h) {
      auto w = h.alloc_window_buffer({kRows, kCols}, dtype_of<T>, "win");
      auto s = h.alloc_window_buffer({p}, DType::INT32, "sig");
      for (int r = 0; r < p; ++r)
        h.dispatch(r, tile_ops<T>, h.window<T>(w, {kRows, kCols}), h.window<std::int32_t>(s, {p}), a[r], b[r], out[r]);
    });
    for (int r = 0; r < p; ++r) {
      const int left = (r + p - 1) % p;
      for (Index i = 0; i < kRows; ++i)
        for (Index j = 0; j < kCols; ++j) {
          for (int op = 0; op < 5; ++op)
            ASSERT_EQ(value(out(r, op, i, j)), value(combine<T>(op, a(r, i, j), b(r, i, j))))
                << "op " << op << " P=" << p;
          if (j < kRows) {
            ASSERT_EQ(value(out(r, 5, i, j)), value(a(r, j, i)));
          }
          const bool valid = i < kRows - 1 && j < kCols - 2;
          const T expect = valid ? a(left, i + 1, j + 2) : T(static_cast<float>(0));
          ASSERT_EQ(value(out(r, 6, i, j)), value(expect)) << "remote_load P=" << p << " rank " << r;
        }
    }
  });
}

}  // namespace
}  // namespace pld::test

namespace pld::test {
namespace {

void scalar_ops(Tensor<float> in, Tensor<float> out) {
  const auto t = tile::load(in, {0, 0}, {2, 3}, {2, 2});  // the last column is not valid
  tile::store(tile::add(t, 1.0f), {0, 0, 0}, out);
  tile::store(tile::sub(t, 1.0f), {1, 0, 0}, out);
  tile::store(tile::mul(t, 3.0f), {2, 0, 0}, out);
  tile::store(tile::max(t, 2.0f), {3, 0, 0}, out);
  tile::store(tile::min(tile::full<float>({2, 3}, 5.0f), 4.0f), {4, 0, 0}, out);
}

TEST(Tiles, ScalarFormsAndFull) {
  PLD_REQUIRE_RANKS(1);
  auto in = HostTensor<float>::arange({1, 2, 3});
  auto out = HostTensor<float>::full({1, 5, 2, 3}, -1.0f);
  run(ranks(1), [&](Host& h) { h.dispatch(0, scalar_ops, in[0], out[0]); });
  for (Index i = 0; i < 2; ++i)
    for (Index j = 0; j < 3; ++j) {
      const float x = in(0, i, j);
      const bool valid = j < 2;  // stores write the valid part only
      EXPECT_EQ(out(0, 0, i, j), valid ? x + 1 : -1.0f);
      EXPECT_EQ(out(0, 1, i, j), valid ? x - 1 : -1.0f);
      EXPECT_EQ(out(0, 2, i, j), valid ? x * 3 : -1.0f);
      EXPECT_EQ(out(0, 3, i, j), valid ? std::max(x, 2.0f) : -1.0f);
      EXPECT_EQ(out(0, 4, i, j), 4.0f);
    }
}

INSTANTIATE_TEST_SUITE_P(P, Tiles, ::testing::ValuesIn(every_type_and_ranks(rank_counts(1, 8, {5}))),
                         type_and_ranks_name);

}  // namespace
}  // namespace pld::test
