// Collectives on comm domains: a sub-domain, overlapping domains running at the same time (a rank
// in two domains has two ranks and two signals), and a 64-rank domain (no silent size limit).
#include "support.hpp"

namespace pld::test {
namespace {

void sum_of_ranks(DistributedTensor<std::int32_t> v, DistributedTensor<std::int32_t> sig, Tensor<std::int32_t> out) {
  const int me = rank(get_comm_ctx(v));
  for (int k = 1; k <= 3; ++k) {
    tile::write(v, {0}, (me + 1) * k);
    tensor::allreduce(v, sig);
    tensor::barrier(sig);
    out(k - 1) = tile::read(v, {0});
  }
}

void in_both(DistributedTensor<std::int32_t> va, DistributedTensor<std::int32_t> sa, DistributedTensor<std::int32_t> vb,
             DistributedTensor<std::int32_t> sb, Tensor<std::int32_t> oa, Tensor<std::int32_t> ob) {
  // Interleave the two domains' collectives call by call.
  const int ra = rank(get_comm_ctx(va)), rb = rank(get_comm_ctx(vb));
  for (int k = 1; k <= 3; ++k) {
    tile::write(va, {0}, (ra + 1) * k);
    tile::write(vb, {0}, (rb + 1) * k);
    tensor::allreduce(va, sa);
    tensor::allreduce(vb, sb);
    tensor::barrier(sa);  // the same sequence of collectives as the other member of each domain
    tensor::barrier(sb);
    oa(k - 1) = tile::read(va, {0});
    ob(k - 1) = tile::read(vb, {0});
  }
}

TEST(DomainCollectives, OverlappingDomainsAtOnce) {
  PLD_REQUIRE_RANKS(3);
  // {0, 1} and {1, 2}: rank 1 is rank 1 of the first and rank 0 of the second.
  auto out = HostTensor<std::int32_t>::zeros({2, 3, 3});
  run(ranks(3), [&](Host& h) {
    auto a = h.domain({0, 1});
    auto b = h.domain({1, 2});
    auto va = a.window<std::int32_t>(a.alloc_window_buffer(4, "v"), {1});
    auto sa = a.window<std::int32_t>(a.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
    auto vb = b.window<std::int32_t>(b.alloc_window_buffer(4, "v"), {1});
    auto sb = b.window<std::int32_t>(b.alloc_window_buffer({2, 1}, DType::INT32, "sig"), {2, 1});
    h.dispatch(0, sum_of_ranks, va, sa, out[0][0]);
    h.dispatch(1, in_both, va, sa, vb, sb, out[0][1], out[1][1]);
    h.dispatch(2, sum_of_ranks, vb, sb, out[1][2]);
    // And the host builtin path on each domain, plus one on the world.
    h.allreduce(va);
    h.allreduce(vb);
    h.barrier();
  });
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out(0, 0, k), 3 * (k + 1));  // (1 + 2) * k
    EXPECT_EQ(out(0, 1, k), 3 * (k + 1));
    EXPECT_EQ(out(1, 1, k), 3 * (k + 1));
    EXPECT_EQ(out(1, 2, k), 3 * (k + 1));
  }
}

TEST(DomainCollectives, SubDomainOfFive) {
  PLD_REQUIRE_RANKS(5);
  auto out = HostTensor<std::int32_t>::zeros({5, 3});
  run(ranks(5), [&](Host& h) {
    auto d = h.domain({4, 1, 3});
    auto v = d.window<std::int32_t>(d.alloc_window_buffer(4, "v"), {1});
    auto s = d.window<std::int32_t>(d.alloc_window_buffer({3, 16}, DType::INT32, "sig"), {3, 16});
    for (int r : d.ranks()) h.dispatch(r, sum_of_ranks, v, s, out[r]);
  });
  for (int r : {1, 3, 4})
    for (int k = 0; k < 3; ++k) EXPECT_EQ(out(r, k), 6 * (k + 1));  // (1 + 2 + 3) * k
}

void wide(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig, Tensor<float> out) {
  const int me = rank(get_comm_ctx(v));
  for (Index i = 0; i < v.numel(); ++i) tile::write(v, {i}, static_cast<float>(me + i));
  tensor::allreduce(v, sig, {.mode = AllreduceMode::TwoShot});
  tensor::get(out, me, v);
  tensor::barrier(sig);
}

TEST(DomainCollectives, SixtyFourRanks) {
  PLD_REQUIRE_RANKS(64);
  constexpr int kRanks = 64;
  constexpr Index kLen = 130;  // not divisible by 64
  auto out = HostTensor<float>::zeros({kRanks, kLen});
  auto cfg = ranks(kRanks);
  cfg.heap_bytes = 1 << 20;
  run(cfg, [&](Host& h) {
    auto v = h.window<float>(h.alloc_window_buffer({kLen}, DType::FP32, "v"), {kLen});
    auto s = h.window<std::int32_t>(h.alloc_window_buffer({kRanks, 1}, DType::INT32, "sig"), {kRanks, 1});
    for (int r = 0; r < kRanks; ++r) h.dispatch(r, wide, v, s, out[r]);
    h.allreduce(v, {.mode = AllreduceMode::Mesh});
    h.broadcast(v, {.root = kRanks - 1});
  });
  for (int r = 0; r < kRanks; r += 9)
    for (Index i = 0; i < kLen; ++i) ASSERT_EQ(out(r, i), static_cast<float>(kRanks * i + kRanks * (kRanks - 1) / 2));
}

}  // namespace
}  // namespace pld::test
