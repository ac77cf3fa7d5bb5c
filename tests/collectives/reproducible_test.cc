// Bit-identical results: on every rank for every schedule, and across schedules when
// reproducible is set (Ring then runs in canonical rank order). Random fp32/bf16 data, where
// the summation order shows in the last bits.
#include "support.hpp"

#include <cstring>

namespace pld::test {
namespace {

template <class T>
void modes(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> out) {
  const int me = rank(get_comm_ctx(win));
  const AllreduceOptions cases[] = {{.mode = AllreduceMode::Mesh},
                                    {.mode = AllreduceMode::TwoShot},
                                    {.mode = AllreduceMode::TwoShot, .core_num = 3},
                                    {.mode = AllreduceMode::Ring, .reproducible = true},
                                    {.mode = AllreduceMode::Ring}};
  for (Index c = 0; c < 5; ++c) {
    tensor::put(win, me, in);
    tensor::allreduce(win, sig, cases[c]);
    tensor::get(out[c], me, win);
  }
}

class Reproducible : public ::testing::TestWithParam<TypeAndRanks> {};
using FloatTypes = ::testing::Types<float, bf16, fp16, double>;

TEST_P(Reproducible, SameBitsOnEveryRankAndAcrossSchedules) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(FloatTypes{}, GetParam().dtype, [&]<class T>() {
    constexpr Index kLen = 10007;
    auto in = HostTensor<T>::random({p, kLen}, 1234 + p);
    auto out = HostTensor<T>::zeros({p, 5, kLen});
    run(ranks(p), [&](Host& h) {
      auto w = h.window<T>(h.alloc_window_buffer({kLen}, dtype_of<T>, "win"), {kLen});
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({p, 16}, DType::INT32, "sig"), {p, 16});
      for (int r = 0; r < p; ++r) h.dispatch(r, modes<T>, w, s, in[r], out[r]);
    });
    auto bits = [&](int r, int c) { return out[r][c].data(); };
    for (int r = 0; r < p; ++r)
      for (int c = 0; c < 5; ++c)
        ASSERT_EQ(std::memcmp(bits(r, c), bits(0, c), kLen * sizeof(T)), 0) << "rank " << r << " case " << c;
    for (int c = 1; c < 4; ++c)
      ASSERT_EQ(std::memcmp(bits(0, c), bits(0, 0), kLen * sizeof(T)), 0) << "case " << c << " differs from Mesh";
    // And the canonical order is what a plain left-to-right sum in the accumulation type gives.
    for (Index i = 0; i < kLen; i += 97) {
      using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
      Acc acc = static_cast<Acc>(value(in(0, i)));
      for (int r = 1; r < p; ++r) acc += static_cast<Acc>(value(in(r, i)));
      ASSERT_EQ(value(out(0, 0, i)), value(static_cast<T>(acc))) << "i " << i;
    }
  });
}

template <class T>
void sum_once(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> out) {
  const int me = rank(get_comm_ctx(win));
  tensor::put(win, me, in);
  tensor::allreduce(win, sig);
  tensor::get(out, me, win);
}

// Vectors of megabytes take other paths under the mpi backend (across nodes: pieces streamed
// from node to node); their bits are still the canonical order's, on every rank.
class ReproducibleLarge : public ::testing::TestWithParam<TypeAndRanks> {};

TEST_P(ReproducibleLarge, GivesTheBitsOfTheCanonicalOrder) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(FloatTypes{}, GetParam().dtype, [&]<class T>() {
    const Index len = static_cast<Index>((3u << 20) / sizeof(T) + 5);  // several pieces and a partial one
    auto in = HostTensor<T>::random({p, len}, 99 + p);
    auto out = HostTensor<T>::zeros({p, len});
    run(ranks(p), [&](Host& h) {
      auto w = h.window<T>(h.alloc_window_buffer({len}, dtype_of<T>, "win"), {len});
      auto s = h.window<std::int32_t>(h.alloc_window_buffer({p, 16}, DType::INT32, "sig"), {p, 16});
      for (int r = 0; r < p; ++r) h.dispatch(r, sum_once<T>, w, s, in[r], out[r]);
    });
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    for (Index i = 0; i < len; ++i) {
      Acc acc = static_cast<Acc>(value(in(0, i)));
      for (int r = 1; r < p; ++r) acc += static_cast<Acc>(value(in(r, i)));
      for (int r = 0; r < p; ++r) ASSERT_EQ(value(out(r, i)), value(static_cast<T>(acc))) << "rank " << r << " i " << i;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(P, Reproducible, ::testing::ValuesIn(types_and_ranks(FloatTypes{}, rank_counts(3, 5, {4}))),
                         type_and_ranks_name);
INSTANTIATE_TEST_SUITE_P(P, ReproducibleLarge, ::testing::ValuesIn(types_and_ranks(FloatTypes{}, rank_counts(2, 4))),
                         type_and_ranks_name);

}  // namespace
}  // namespace pld::test
