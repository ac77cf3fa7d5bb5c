// Comm domains over subsets of the world: domain-local ranks, overlapping domains (a rank in two
// domains has two ranks, two windows, two signal sets), and no aliasing between domains.
#include "support.hpp"

namespace pld::test {
namespace {

// Sum of `x` over the domain, written to out; also records (rank, nranks, world rank of peer 0).
void domain_sum(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig, std::int32_t x,
                Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(data);
  const int me = rank(ctx), n = nranks(ctx);
  tile::write(data, {0}, x);
  for (int p = 0; p < n; ++p) system::notify(sig, p, {me}, 1, NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s) system::wait(sig, {s}, 1, WaitCmp::Ge);
  std::int32_t sum = 0;
  for (int p = 0; p < n; ++p) sum += tile::remote_load(data, p, {0}, {1})(0);
  out(0) = sum;
  out(1) = me;
  out(2) = n;
  out(3) = ctx.world_rank(0);
}

// Rank in two domains: one dispatch works on both at once.
void two_domains(DistributedTensor<std::int32_t> da, DistributedTensor<std::int32_t> sa,
                 DistributedTensor<std::int32_t> db, DistributedTensor<std::int32_t> sb, std::int32_t x,
                 Tensor<std::int32_t> out_a, Tensor<std::int32_t> out_b) {
  domain_sum(da, sa, x, out_a);
  domain_sum(db, sb, x * 10, out_b);
}

TEST(Domains, OverlappingDomainsOnThreeRanks) {
  PLD_REQUIRE_RANKS(3);
  // Domains {0, 1} and {1, 2}: rank 1 is domain-local rank 1 in the first and 0 in the second.
  auto out = HostTensor<std::int32_t>::full({2, 3, 4}, -1);
  run(ranks(3), [&](Host& h) {
    auto a = h.domain({0, 1});
    auto b = h.domain({2, 1});  // order does not matter: ranks are sorted
    auto da = a.alloc_window_buffer(64, "data");
    auto sa = a.alloc_window_buffer({2}, DType::INT32, "sig");
    auto db = b.alloc_window_buffer(64, "data");  // same name, other domain: fine
    auto sb = b.alloc_window_buffer({2}, DType::INT32, "sig");
    auto wa = a.window<std::int32_t>(da, {1});
    auto wb = b.window<std::int32_t>(db, {1});
    auto ga = a.window<std::int32_t>(sa, {2});
    auto gb = b.window<std::int32_t>(sb, {2});
    h.dispatch(0, domain_sum, wa, ga, 1, out[0][0]);
    h.dispatch(1, two_domains, wa, ga, wb, gb, 2, out[0][1], out[1][1]);
    h.dispatch(2, domain_sum, wb, gb, 30, out[1][2]);
  });
  // Domain {0,1}: 1 + 2 = 3; domain {1,2}: 20 + 30 = 50.
  EXPECT_EQ(out(0, 0, 0), 3);
  EXPECT_EQ(out(0, 1, 0), 3);
  EXPECT_EQ(out(1, 1, 0), 50);
  EXPECT_EQ(out(1, 2, 0), 50);
  // Domain-local ranks and sizes.
  EXPECT_EQ(out(0, 0, 1), 0);
  EXPECT_EQ(out(0, 1, 1), 1);
  EXPECT_EQ(out(1, 1, 1), 0);
  EXPECT_EQ(out(1, 2, 1), 1);
  for (auto [d, r] : {std::pair{0, 0}, {0, 1}, {1, 1}, {1, 2}}) EXPECT_EQ(out(d, r, 2), 2);
  EXPECT_EQ(out(0, 0, 3), 0);  // domain-local rank 0 of {0,1} is world rank 0
  EXPECT_EQ(out(1, 2, 3), 1);  // domain-local rank 0 of {1,2} is world rank 1
}

TEST(Domains, EightRanksThreeOverlappingDomainsAndTheWorld) {
  PLD_REQUIRE_RANKS(8);
  const std::vector<std::vector<int>> groups = {{0, 1, 2, 3}, {4, 5, 6, 7}, {2, 3, 4, 5}, {0, 1, 2, 3, 4, 5, 6, 7}};
  auto out = HostTensor<std::int32_t>::full({static_cast<Index>(groups.size()), 8, 4}, -1);
  run(ranks(8), [&](Host& h) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      CommDomain d = g + 1 == groups.size() ? h.world() : h.domain(groups[g]);
      auto data = d.alloc_window_buffer(sizeof(std::int32_t), "data");
      auto sig = d.alloc_window_buffer({d.size()}, DType::INT32, "sig");
      for (int r : d.ranks())
        h.dispatch(r, domain_sum, d.window<std::int32_t>(data, {1}), d.window<std::int32_t>(sig, {d.size()}),
                   static_cast<std::int32_t>(r + 1), out[static_cast<Index>(g)][r]);
    }
  });
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::int32_t sum = 0;
    for (int r : groups[g]) sum += r + 1;
    for (std::size_t i = 0; i < groups[g].size(); ++i) {
      const int r = groups[g][i];
      EXPECT_EQ(out(static_cast<Index>(g), r, 0), sum) << "group " << g << " rank " << r;
      EXPECT_EQ(out(static_cast<Index>(g), r, 1), static_cast<int>(i));
      EXPECT_EQ(out(static_cast<Index>(g), r, 2), static_cast<int>(groups[g].size()));
    }
  }
}

}  // namespace
}  // namespace pld::test
