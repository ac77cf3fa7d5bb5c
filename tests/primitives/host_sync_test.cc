// HostTensors under the mpi backend (docs/05-mpi.md): by default every process ends a call with
// what every rank wrote; with PLD_MPI_HOST_SYNC=none only with its own rank's slice, and
// pld::gather collects the others. On shm the ranks write the host's memory and gather does nothing.
#include "support.hpp"

#include <cstdlib>

namespace pld::test {
namespace {

void write_rank(DistributedTensor<std::int32_t> ident, Tensor<std::int32_t> out) {
  const int me = rank(get_comm_ctx(ident));
  for (Index i = 0; i < out.numel(); ++i) tile::write(out, {0, i}, static_cast<std::int32_t>(me * 100 + i));
}

HostTensor<std::int32_t> run_writes(int p) {
  auto out = HostTensor<std::int32_t>::zeros({p, 1, 5});  // 20-byte slices share cache lines
  run(ranks(p), [&](Host& h) {
    auto w = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "ident"), {1});
    for (int r = 0; r < p; ++r) h.dispatch(r, write_rank, w, out[r]);
  });
  return out;
}

// Rows 2r and 2r + 1 of rank r: two views that touch, and row 2r once more in a later dispatch.
void write_pair(DistributedTensor<std::int32_t> ident, Tensor<std::int32_t> first, Tensor<std::int32_t> second) {
  const int me = rank(get_comm_ctx(ident));
  for (Index i = 0; i < first.numel(); ++i) {
    tile::write(first, {0, i}, static_cast<std::int32_t>(-me - 1));
    tile::write(second, {0, i}, static_cast<std::int32_t>(me * 100 + 50 + i));
  }
}

void expect_all(const HostTensor<std::int32_t>& out, int p) {
  for (int r = 0; r < p; ++r)
    for (Index i = 0; i < 5; ++i) ASSERT_EQ(out(r, 0, i), r * 100 + i) << "slice " << r;
}

class HostSync : public ::testing::TestWithParam<int> {};

TEST_P(HostSync, EveryProcessEndsWithEveryRanksWrites) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  expect_all(run_writes(p), p);
}

// Under mpi each process snapshots and compares only the bytes its dispatches view, joining views
// that overlap or touch, and reuses its buffers in the next (smaller) call.
TEST_P(HostSync, TouchingAndRepeatedViewsThenASmallerCall) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  auto pairs = HostTensor<std::int32_t>::zeros({2 * p, 1, 5});
  run(ranks(p), [&](Host& h) {
    auto w = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "ident"), {1});
    for (int r = 0; r < p; ++r) h.dispatch(r, write_pair, w, pairs[2 * r], pairs[2 * r + 1]);
    for (int r = 0; r < p; ++r) h.dispatch(r, write_rank, w, pairs[2 * r]);
  });
  for (int r = 0; r < p; ++r)
    for (Index i = 0; i < 5; ++i) {
      ASSERT_EQ(pairs(2 * r, 0, i), r * 100 + i) << "row " << 2 * r;
      ASSERT_EQ(pairs(2 * r + 1, 0, i), r * 100 + 50 + i) << "row " << 2 * r + 1;
    }
  expect_all(run_writes(p), p);
}

// Every rank views the whole tensor: rank r sets every P-th byte from r (words where some bytes
// changed and others did not) and a 21-byte run from 24 r + 3 (whole changed words, then a tail).
constexpr Index kInterleaved = 24 * 8 + 5;
int run_owner(int p, Index i) {  // the rank whose run holds byte i, or -1
  if (i < 3 || (i - 3) % 24 >= 21 || (i - 3) / 24 >= p) return -1;
  return static_cast<int>((i - 3) / 24);
}
std::int8_t interleaved_value(int p, Index i) {
  const int owner = run_owner(p, i);
  return static_cast<std::int8_t>(owner >= 0 ? -1 - owner : 1 + i % p);
}
void write_interleaved(DistributedTensor<std::int32_t> ident, Tensor<std::int8_t> all) {
  const auto ctx = get_comm_ctx(ident);
  const int me = rank(ctx), p = nranks(ctx);
  for (Index i = 0; i < kInterleaved; ++i) {
    const int owner = run_owner(p, i);
    if (owner >= 0 ? owner == me : i % p == me) tile::write(all, {i}, interleaved_value(p, i));
  }
}

TEST_P(HostSync, RanksSharingOneViewKeepEachOthersBytes) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  auto all = HostTensor<std::int8_t>::zeros({kInterleaved});
  run(ranks(p), [&](Host& h) {
    auto w = h.window<std::int32_t>(h.alloc_window_buffer({1}, DType::INT32, "ident"), {1});
    for (int r = 0; r < p; ++r) h.dispatch(r, write_interleaved, w, all);
  });
  for (Index i = 0; i < kInterleaved; ++i) ASSERT_EQ(all(i), interleaved_value(p, i)) << "byte " << i;
}

TEST_P(HostSync, NoneKeepsOwnSliceAndGatherCollects) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  setenv("PLD_MPI_HOST_SYNC", "none", 1);
  auto out = run_writes(p);
  auto again = run_writes(p);
  unsetenv("PLD_MPI_HOST_SYNC");
  const int me = launcher_world_size() > 0 ? std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")) : -1;
  if (me >= 0) {
    for (int r = 0; r < p; ++r)
      EXPECT_EQ(out(r, 0, 1), r == me ? r * 100 + 1 : 0) << "without merge, only my rank's slice is here";
  }
  gather(out);  // to every process
  expect_all(out, p);
  gather(again, 0);  // to process 0 only
  if (is_output_rank()) expect_all(again, p);
  if (launcher_world_size() > 0) expect_usage_error([&] { gather(again, p); }, "is not a rank of");
}

INSTANTIATE_TEST_SUITE_P(P, HostSync, ::testing::ValuesIn(rank_counts(1, 4)), rank_count_name);

}  // namespace
}  // namespace pld::test
