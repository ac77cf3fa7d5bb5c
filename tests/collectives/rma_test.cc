// The collectives' RMA schedules (peers reached only through Backend::get/put, coll/peer.h),
// forced on shm with PLD_COLL_RMA=1, against the direct schedules: the same bits for every
// allreduce mode, reduce_scatter, broadcast and the exchanges, on vectors of several RMA chunks
// (256 KiB per peer), with random floating-point inputs whose sums depend on the order.
// The whole collective suite also runs under PLD_COLL_RMA=1 (CTest prefix collective_tests.rma.).
#include "support.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace pld::test {
namespace {

struct Case {
  AllreduceMode mode;
  ReduceOp op;
  int core_num;
};
constexpr Case kCases[] = {
    {AllreduceMode::Mesh, ReduceOp::Sum, 1},    {AllreduceMode::TwoShot, ReduceOp::Sum, 1},
    {AllreduceMode::Ring, ReduceOp::Sum, 1},    {AllreduceMode::Mesh, ReduceOp::Sum, 3},
    {AllreduceMode::TwoShot, ReduceOp::Max, 3}, {AllreduceMode::Ring, ReduceOp::Prod, 2},
};
constexpr Index kNumCases = sizeof(kCases) / sizeof(kCases[0]);

template <class T>
void stage(DistributedTensor<T> w, Tensor<T> in) {
  tensor::put(w, rank(get_comm_ctx(w)), in);
}
template <class T>
void collect(DistributedTensor<T> w, Tensor<T> out) {
  tensor::get(out, rank(get_comm_ctx(w)), w);
}

// Every allreduce case, reduce_scatter, broadcast from the last rank, allgather, all_to_all and
// all_to_all_v (rank r sends (r + d) % 2 of its one-row blocks to rank d) on one signal.
template <class T>
void schedules(DistributedTensor<T> v, DistributedTensor<T> rows, DistributedTensor<std::int32_t> recv_counts,
               DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> rows_in, Tensor<T> out, Tensor<T> rows_out,
               Tensor<std::int32_t> counts_out) {
  auto ctx = get_comm_ctx(v);
  const int me = rank(ctx), n = nranks(ctx);
  for (Index c = 0; c < kNumCases; ++c) {
    stage(v, in);
    tensor::allreduce(v, sig, {.op = kCases[c].op, .mode = kCases[c].mode, .core_num = kCases[c].core_num});
    collect(v, out[c]);
  }
  stage(v, in);
  tensor::broadcast(v, sig, {.root = n - 1, .core_num = 2});
  collect(v, out[kNumCases]);

  stage(rows, rows_in);
  tensor::reduce_scatter(rows, sig, {.op = ReduceOp::Sum});
  collect(rows, rows_out[0]);
  tensor::allgather(rows_in[0], rows, sig, {.core_num = 2});
  collect(rows, rows_out[1]);
  tensor::all_to_all(rows_in, rows, sig);
  collect(rows, rows_out[2]);
  std::vector<std::int32_t> send(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) send[static_cast<std::size_t>(d)] = (me + d) % 2;
  stage(rows, rows_out[0]);  // rows past a count keep what was there
  tensor::all_to_all_v(rows_in, rows, sig, Tensor<std::int32_t>(send.data(), {n}), recv_counts);
  collect(rows, rows_out[3]);
  collect(recv_counts, counts_out);
}

template <class T>
struct Outputs {
  HostTensor<T> out, rows_out;
  HostTensor<std::int32_t> counts;
};

template <class T>
Outputs<T> run_schedules(int p, Index n, Index m, const char* rma) {
  ScopedEnv env("PLD_COLL_RMA", rma);
  auto in = HostTensor<T>::random({p, n}, 7);
  auto rows_in = HostTensor<T>::random({p, p, m}, 11);
  Outputs<T> o{HostTensor<T>::zeros({p, kNumCases + 1, n}), HostTensor<T>::zeros({p, 4, p, m}),
               HostTensor<std::int32_t>::zeros({p, p, 1})};
  run(ranks(p), [&](Host& h) {
    auto v = h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, "v"), {n});
    auto rows = h.window<T>(h.alloc_window_buffer({p, m}, dtype_of<T>, "rows"), {p, m});
    auto rc = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "recv_counts"), {p, 1});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 16}, DType::INT32, "sig"), {p, 16});
    for (int r = 0; r < p; ++r)
      h.dispatch(r, schedules<T>, v, rows, rc, sig, in[r], rows_in[r], o.out[r], o.rows_out[r], o.counts[r]);
  });
  return o;
}

/// Tensor or HostTensor views of one element type, compared bit for bit.
template <class A, class B>
bool same_bits(const A& a, const B& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(*a.data())) == 0;
}

class RmaSchedules : public ::testing::TestWithParam<TypeAndRanks> {};
using FloatTypes = ::testing::Types<float, fp16, bf16>;

TEST_P(RmaSchedules, SameBitsAsDirectOverSeveralChunks) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(FloatTypes{}, GetParam().dtype, [&]<class T>() {
    // ~800 KB per rank: Mesh reads 4 chunks per peer, TwoShot and Ring segments span 2 at P = 3.
    const Index n = 800000 / static_cast<Index>(sizeof(T)) + 7, m = 300000 / static_cast<Index>(sizeof(T)) + 5;
    const Outputs<T> direct = run_schedules<T>(p, n, m, "0");
    const Outputs<T> rma = run_schedules<T>(p, n, m, "1");
    for (int r = 0; r < p; ++r) {
      for (Index c = 0; c <= kNumCases; ++c) {
        EXPECT_TRUE(same_bits(direct.out[r][c], rma.out[r][c]))
            << "P=" << p << " rank " << r << (c < kNumCases ? " allreduce case " : " broadcast ") << c;
        EXPECT_TRUE(same_bits(rma.out[r][c], rma.out[0][c]))
            << "P=" << p << " rank " << r << " differs from rank 0, case " << c;
      }
      // Mesh and TwoShot reduce in the same (ascending rank) order: the same bits.
      EXPECT_TRUE(same_bits(rma.out[r][0], rma.out[r][1])) << "P=" << p;
      for (int k = 0; k < 4; ++k)
        EXPECT_TRUE(same_bits(direct.rows_out[r][k], rma.rows_out[r][k]))
            << "P=" << p << " rank " << r << " row collective " << k;
      EXPECT_TRUE(same_bits(direct.counts, rma.counts)) << "P=" << p;
    }
    // Spot checks against the inputs (the full value checks are collective_test.cc's).
    const auto in = HostTensor<T>::random({p, n}, 7);
    const auto rows_in = HostTensor<T>::random({p, p, m}, 11);
    for (int r = 0; r < p; ++r)
      for (Index i : {Index{0}, n / 2, n - 1}) ASSERT_EQ(value(rma.out(r, kNumCases, i)), value(in(p - 1, i)));
    for (int r = 0; r < p; ++r)
      for (int s = 0; s < p; ++s)
        for (Index i : {Index{0}, m - 1}) {
          ASSERT_EQ(value(rma.rows_out(r, 1, s, i)), value(rows_in(s, 0, i))) << "allgather";
          ASSERT_EQ(value(rma.rows_out(r, 2, s, i)), value(rows_in(s, r, i))) << "all_to_all";
          ASSERT_EQ(rma.counts(r, s, 0), (s + r) % 2) << "all_to_all_v counts";
        }
  });
}

// Above 17 ranks an RMA step stages 4 MiB / (P - 1) per peer instead of 256 KiB.
TEST(RmaSchedules, ManyRanksSmallerChunks) {
  PLD_REQUIRE_RANKS(20);
  constexpr int p = 20;
  const Index n = 600000 / 4 + 3;
  auto in = HostTensor<float>::random({p, n}, 5);
  auto direct = HostTensor<float>::zeros({p, 2, n}), rma = HostTensor<float>::zeros({p, 2, n});
  for (HostTensor<float>* out : {&direct, &rma}) {
    ScopedEnv env("PLD_COLL_RMA", out == &rma ? "1" : "0");
    run(ranks(p), [&](Host& h) {
      auto v = h.window<float>(h.alloc_window_buffer({n}, DType::FP32, "v"), {n});
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
      for (int r = 0; r < p; ++r) h.dispatch(r, stage<float>, v, in[r]);
      h.allreduce(v, sig, {.mode = AllreduceMode::Mesh});
      for (int r = 0; r < p; ++r) h.dispatch(r, collect<float>, v, (*out)[r][0]);
      for (int r = 0; r < p; ++r) h.dispatch(r, stage<float>, v, in[r]);
      h.allreduce(v, sig, {.mode = AllreduceMode::TwoShot});
      for (int r = 0; r < p; ++r) h.dispatch(r, collect<float>, v, (*out)[r][1]);
    });
  }
  EXPECT_TRUE(same_bits(direct, rma));
  for (int r = 0; r < p; ++r) EXPECT_TRUE(same_bits(rma[r][0], rma[0][1]));
}

INSTANTIATE_TEST_SUITE_P(P, RmaSchedules, ::testing::ValuesIn(types_and_ranks(FloatTypes{}, rank_counts(2, 5, {4}))),
                         type_and_ranks_name);

}  // namespace
}  // namespace pld::test
