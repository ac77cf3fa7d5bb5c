// The collectives at large sizes: rows of hundreds of KiB to over 1 MiB through the push
// collectives (both copy orders, core_num 1 and 2), all_to_all_v blocks of several messages, and
// reductions of tens of MiB; P in {2, 3}.
#include "support.hpp"

#include <cstring>

namespace pld::test {
namespace {

// Large rows through the push collectives. On shm each rank's copies into a target alternate
// between forward and backward from one call to the next (src/core/copy.h, CopyOrder), in 64 KiB
// blocks; two calls of each collective run both orders (under PLD_COLL_RMA=1 the same checks run
// on the RMA schedules). Every call lands on a poisoned target, so a skipped block keeps the
// poison, and the data never repeats within a row, so a misplaced block shows. Rows of
// 3 x 64 KiB + 13 bytes copy with memcpy, rows above 1 MiB stream (allgather: fused); core_num 2
// splits all_to_all and allgather rows over two lanes, the second starting mid-row. int8 makes
// the tails odd.
template <class T>
T large_input(std::int64_t source, std::int64_t i) {  // no short period; exact in every dtype
  return static_cast<T>(static_cast<float>((i * 7919 + source * 104729 + i / 97) % 101 - 50));
}

template <class T>
void push_large(DistributedTensor<T> target, DistributedTensor<T> vtarget, DistributedTensor<T> gtarget,
                DistributedTensor<std::int32_t> sig, DistributedTensor<std::int32_t> recv, Tensor<T> in,
                Tensor<T> poison, Tensor<std::int32_t> counts, Tensor<T> out, Tensor<T> vout, Tensor<T> gout) {
  const int me = rank(get_comm_ctx(target));
  for (int k = 0; k < 4; ++k) {  // core_num 1, 1, 2, 2: both orders with each
    tensor::put(target, me, poison);
    tensor::all_to_all(in, target, sig, {.core_num = 1 + k / 2});
    tensor::get(out[k], me, target);
  }
  for (int k = 0; k < 2; ++k) {
    tensor::put(vtarget, me, poison);
    tensor::all_to_all_v(in, vtarget, sig, counts, recv);
    tensor::get(vout[k], me, vtarget);
  }
  for (int k = 0; k < 4; ++k) {
    tensor::put(gtarget, me, poison);
    tensor::allgather(in[me], gtarget, sig, {.core_num = 1 + k / 2});  // my row `me` of the input
    tensor::get(gout[k], me, gtarget);
  }
}

template <class T>
void push_large_rows(int p) {
  for (std::size_t row_bytes : {std::size_t{3 * 65536 + 13}, std::size_t{(1u << 20) + 4097}}) {
    // Under mpirun the rows travel as puts, in one order; the streaming-size row would only add
    // seconds over TCP.
    if (row_bytes > (1u << 20) && launcher_world_size() > 0) continue;
    const Index n = static_cast<Index>(row_bytes / sizeof(T));
    auto in = HostTensor<T>::zeros({p, p, n});
    for (int r = 0; r < p; ++r)
      for (int d = 0; d < p; ++d)
        for (Index i = 0; i < n; ++i) in(r, d, i) = large_input<T>(r * p + d, i);
    auto poison = HostTensor<T>::zeros({p, n});
    for (Index i = 0; i < p * n; ++i) poison.data()[i] = static_cast<T>(static_cast<float>(-77));
    auto counts = HostTensor<std::int32_t>::zeros({p, p});  // all_to_all_v with MAX_RECV = 1: every row sent
    for (int r = 0; r < p; ++r)
      for (int d = 0; d < p; ++d) counts(r, d) = 1;
    auto out = HostTensor<T>::zeros({p, 4, p, n});
    auto vout = HostTensor<T>::zeros({p, 2, p, n});
    auto gout = HostTensor<T>::zeros({p, 4, p, n});
    run(ranks(p), [&](Host& h) {
      auto t = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "target"), {p, n});
      auto vt = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "vtarget"), {p, n});
      auto gt = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "gtarget"), {p, n});
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 2}, DType::INT32, "sig"), {p, 2});
      auto recv = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "recv"), {p, 1});
      for (int r = 0; r < p; ++r)
        h.dispatch(r, push_large<T>, t, vt, gt, sig, recv, in[r], Tensor<T>(poison), counts[r], out[r], vout[r],
                   gout[r]);
    });
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);  // a copy: compare bits
    auto where = [&](const char* op, int r, int s, int k) {
      return std::string(op) + " P=" + std::to_string(p) + " row bytes " + std::to_string(row_bytes) + " rank " +
             std::to_string(r) + " from " + std::to_string(s) + " call " + std::to_string(k);
    };
    for (int r = 0; r < p; ++r)
      for (int s = 0; s < p; ++s) {
        for (int k = 0; k < 4; ++k) {
          ASSERT_EQ(std::memcmp(out[r][k][s].data(), in[s][r].data(), bytes), 0) << where("all_to_all", r, s, k);
          ASSERT_EQ(std::memcmp(gout[r][k][s].data(), in[s][s].data(), bytes), 0) << where("allgather", r, s, k);
        }
        for (int k = 0; k < 2; ++k)
          ASSERT_EQ(std::memcmp(vout[r][k][s].data(), in[s][r].data(), bytes), 0) << where("all_to_all_v", r, s, k);
      }
  }
}

class CollectivesLarge : public ::testing::TestWithParam<int> {};
TEST_P(CollectivesLarge, PushCollectivesLargeRowsFp32) {
  PLD_REQUIRE_RANKS(GetParam());
  push_large_rows<float>(GetParam());
}
TEST_P(CollectivesLarge, PushCollectivesLargeRowsInt8) {
  PLD_REQUIRE_RANKS(GetParam());
  push_large_rows<std::int8_t>(GetParam());
}

// all_to_all_v whose blocks span several messages of an exchange (eager pieces of 63 KiB under the
// mpi backend with Open MPI's TCP defaults, 32 KiB without an eager limit from MPI), the last one partial, with counts
// from none to all that change from call to call: every count arrives, and the rows past it keep what the target held.
// Each rank checks itself.
void partial_blocks(DistributedTensor<float> target, DistributedTensor<std::int32_t> sig,
                    DistributedTensor<std::int32_t> recv, Tensor<std::int64_t> wrong) {
  auto ctx = get_comm_ctx(target);
  const int me = rank(ctx), p = nranks(ctx);
  const Index max_recv = target.shape()[0] / p, m = target.shape()[1], rows = p * max_recv;
  auto value_of = [](Index source, Index row, Index i) {
    return static_cast<float>((source * 31 + row * 7 + i) % 251);
  };
  std::vector<float> in(static_cast<std::size_t>(rows * m)), out(in.size()), poison(in.size(), -5.0f);
  std::vector<std::int32_t> counts(static_cast<std::size_t>(p)), got(static_cast<std::size_t>(p));
  std::int64_t bad = 0;
  for (int call = 0; call < 3; ++call) {
    for (Index row = 0; row < rows; ++row)
      for (Index i = 0; i < m; ++i) in[static_cast<std::size_t>(row * m + i)] = value_of(me * 3 + call, row, i);
    for (int d = 0; d < p; ++d)
      counts[static_cast<std::size_t>(d)] = static_cast<std::int32_t>((me + 2 * d + call) % (max_recv + 1));
    tensor::put(target, me, Tensor<float>(poison.data(), {rows, m}));
    tensor::all_to_all_v(Tensor<float>(in.data(), {rows, m}), target, sig, Tensor<std::int32_t>(counts.data(), {p}),
                         recv);
    tensor::get(Tensor<float>(out.data(), {rows, m}), me, target);
    tensor::get(Tensor<std::int32_t>(got.data(), {p, 1}), me, recv);
    for (int s = 0; s < p; ++s) {
      const Index count = (s + 2 * me + call) % (max_recv + 1);
      bad += got[static_cast<std::size_t>(s)] != count;
      for (Index row = 0; row < max_recv; ++row)
        for (Index i = 0; i < m; ++i) {
          const float expect = row < count ? value_of(s * 3 + call, me * max_recv + row, i) : -5.0f;
          bad += out[static_cast<std::size_t>((s * max_recv + row) * m + i)] != expect;
        }
    }
  }
  wrong(0) = bad;
}

TEST_P(CollectivesLarge, AllToAllVPartialBlocksOfSeveralMessages) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  constexpr Index kMaxRecv = 8, kCols = 3073;  // a block of 98336 bytes: 63 KiB + 33824 bytes, or 3 x 32 KiB + 32
  auto wrong = HostTensor<std::int64_t>::full({p, 1}, -1);
  run(ranks(p), [&](Host& h) {
    auto t =
        h.window<float>(h.alloc_window_buffer({p * kMaxRecv, kCols}, DType::FP32, "target"), {p * kMaxRecv, kCols});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    auto recv = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "recv"), {p, 1});
    for (int r = 0; r < p; ++r) h.dispatch(r, partial_blocks, t, sig, recv, wrong[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "P=" << p << " rank " << r;
}

// Reductions of tens of MiB: more than one step of the engine's collectives under the mpi backend
// (8 MiB per step: gathered whole while P x 8 MiB stays within PLD_MPI_EXCHANGE_MAX, else in TwoShot's
// segments) and pld's schedules elsewhere.
// Each rank makes its data and checks its result itself (no host tensors of this size).
void big_reductions(DistributedTensor<float> v, DistributedTensor<float> rows, DistributedTensor<std::int32_t> sig,
                    Tensor<std::int64_t> wrong) {
  auto ctx = get_comm_ctx(v);
  const int me = rank(ctx), p = nranks(ctx);
  const Index n = v.shape()[0], m = rows.shape()[1];
  std::vector<float> buf(static_cast<std::size_t>(std::max<Index>(n, p * m)));
  for (Index i = 0; i < n; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + me * 3) % 13);
  tensor::put(v, me, Tensor<float>(buf.data(), {n}));
  tensor::allreduce(v, sig);
  tensor::get(Tensor<float>(buf.data(), {n}), me, v);
  std::int64_t bad = 0;
  for (Index i = 0; i < n; ++i) {
    float expect = 0;
    for (int r = 0; r < p; ++r) expect += static_cast<float>((i * 7 + r * 3) % 13);
    bad += buf[static_cast<std::size_t>(i)] != expect;
  }
  for (Index q = 0; q < p; ++q)
    for (Index i = 0; i < m; ++i) buf[static_cast<std::size_t>(q * m + i)] = static_cast<float>((i * 5 + q + me) % 11);
  tensor::put(rows, me, Tensor<float>(buf.data(), {p, m}));
  tensor::reduce_scatter(rows, sig, {.op = ReduceOp::Max});
  tensor::get(Tensor<float>(buf.data(), {1, m}), me, rows, {0, 0}, {me, 0}, {1, m});
  for (Index i = 0; i < m; ++i) {
    float expect = 0;
    for (int r = 0; r < p; ++r) expect = std::max(expect, static_cast<float>((i * 5 + me + r) % 11));
    bad += buf[static_cast<std::size_t>(i)] != expect;
  }
  wrong(0) = bad;
}

TEST_P(CollectivesLarge, ReductionsOfTensOfMiB) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  const Index n = 9 * (Index{1} << 20) + 3, m = 5 * (Index{1} << 20) + 7;
  auto wrong = HostTensor<std::int64_t>::full({p, 1}, -1);
  DistributedConfig config = ranks(p);
  config.heap_bytes = 160ull << 20;
  run(config, [&](Host& h) {
    auto v = h.window<float>(h.alloc_window_buffer({n}, DType::FP32, "v"), {n});
    auto rows = h.window<float>(h.alloc_window_buffer({p, m}, DType::FP32, "rows"), {p, m});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "sig"), {p});
    for (int r = 0; r < p; ++r) h.dispatch(r, big_reductions, v, rows, sig, wrong[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "P=" << p << " rank " << r;
}

INSTANTIATE_TEST_SUITE_P(P, CollectivesLarge, ::testing::ValuesIn(rank_counts(2, 3)), rank_count_name);

}  // namespace
}  // namespace pld::test
