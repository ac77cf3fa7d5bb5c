// Every collective x path (composite in a kernel, host builtin) x op x dtype x P in {1,2,3,4,5,8}
// x size {0, 1, odd, large}, each called three times back to back on one signal (self-clearing),
// with goldens computed independently on the host in double / int64.
#include "support.hpp"

#include <cmath>
#include <cstring>

namespace pld::test {
namespace {

constexpr int kReps = 3;

/// Sizes per dtype: 0, 1, odd, and a large one (40 KB, above the old 32 KiB Mesh threshold).
template <class T>
std::vector<Index> sizes() {
  return {0, 1, 37, static_cast<Index>(40000 / sizeof(T) * 1 + 3)};
}

/// allreduce adds both sides of the LL threshold (256 bytes: Auto runs LL up to it, TwoShot above).
constexpr Index kLLBytes = 256;
template <class T>
std::vector<Index> allreduce_sizes() {
  std::vector<Index> s = sizes<T>();
  s.insert(s.end() - 1, {kLLBytes / static_cast<Index>(sizeof(T)), kLLBytes / static_cast<Index>(sizeof(T)) + 1});
  return s;
}

/// Inputs: small integers, exact in every dtype after any reduction over <= 8 ranks.
template <class T>
T input(ReduceOp op, std::int64_t rank, std::int64_t i) {
  if (op == ReduceOp::Prod) return static_cast<T>(static_cast<float>((rank + i) % 3 == 0 ? 2 : 1));
  return static_cast<T>(static_cast<float>((rank * 3 + i * 5 + 1) % 15));
}

template <class T>
T golden(ReduceOp op, int p, std::int64_t i) {
  double acc = static_cast<double>(value(input<T>(op, 0, i)));
  for (int r = 1; r < p; ++r) {
    const double x = static_cast<double>(value(input<T>(op, r, i)));
    switch (op) {
      case ReduceOp::Sum: acc += x; break;
      case ReduceOp::Prod: acc *= x; break;
      case ReduceOp::Max: acc = std::max(acc, x); break;
      case ReduceOp::Min: acc = std::min(acc, x); break;
    }
  }
  return static_cast<T>(static_cast<float>(acc));
}

struct ArCase {
  ReduceOp op;
  AllreduceMode mode;
  int core_num;
};
const std::vector<ArCase>& allreduce_cases() {
  static const std::vector<ArCase> cases = {
      {ReduceOp::Sum, AllreduceMode::Auto, 1},    {ReduceOp::Max, AllreduceMode::Auto, 1},
      {ReduceOp::Min, AllreduceMode::Auto, 1},    {ReduceOp::Prod, AllreduceMode::Auto, 1},
      {ReduceOp::Sum, AllreduceMode::Mesh, 1},    {ReduceOp::Sum, AllreduceMode::Ring, 1},
      {ReduceOp::Max, AllreduceMode::Ring, 1},    {ReduceOp::Sum, AllreduceMode::TwoShot, 1},
      {ReduceOp::Min, AllreduceMode::TwoShot, 1}, {ReduceOp::Sum, AllreduceMode::TwoShot, 3},
      {ReduceOp::Prod, AllreduceMode::Mesh, 2},
  };
  return cases;
}

// ----- kernels -------------------------------------------------------------------------------
template <class T>
Tensor<T> row_view(Tensor<T> t) {  // [n] as [1, n]
  return Tensor<T>(t.data(), {1, t.numel()});
}

template <class T>
void stage(DistributedTensor<T> win, Tensor<T> in) {
  tensor::put(win, rank(get_comm_ctx(win)), in);
}
template <class T>
void collect(DistributedTensor<T> win, Tensor<T> out) {
  tensor::get(out, rank(get_comm_ctx(win)), win);
}

// Composite path: every case, kReps times, on one signal.
template <class T>
void allreduce_all(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> out) {
  const auto& cases = allreduce_cases();
  for (std::size_t c = 0; c < cases.size(); ++c)
    for (int k = 0; k < kReps; ++k) {
      stage(win, in[static_cast<Index>(cases[c].op)]);
      tensor::allreduce(win, sig, {.op = cases[c].op, .mode = cases[c].mode, .core_num = cases[c].core_num});
      collect(win, out[static_cast<Index>(c)][k]);
    }
}

class Collectives : public ::testing::TestWithParam<TypeAndRanks> {};

template <class T>
HostTensor<T> make_inputs(int p, Index n) {
  auto in = HostTensor<T>::zeros({p, 4, n});
  for (int r = 0; r < p; ++r)
    for (int op = 0; op < 4; ++op)
      for (Index i = 0; i < n; ++i) in(r, op, i) = input<T>(static_cast<ReduceOp>(op), r, i);
  return in;
}

TEST_P(Collectives, AllreduceEveryOpModePathSizeAndRankCount) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    const auto& cases = allreduce_cases();
    const auto ncases = static_cast<Index>(cases.size());
    std::vector<HostTensor<T>> ins, outs, host_outs;
    for (Index n : allreduce_sizes<T>()) {
      ins.push_back(make_inputs<T>(p, n));
      outs.push_back(HostTensor<T>::full({p, ncases, kReps, n}, T(static_cast<float>(99))));
      host_outs.push_back(HostTensor<T>::full({p, ncases, kReps, n}, T(static_cast<float>(99))));
    }
    run(ranks(p), [&](Host& h) {
      for (std::size_t s = 0; s < allreduce_sizes<T>().size(); ++s) {
        const Index n = allreduce_sizes<T>()[s];
        auto wb = h.alloc_window_buffer({n}, dtype_of<T>);
        auto sb = h.alloc_window_buffer({p, 4}, DType::INT32);
        const auto win = h.window<T>(wb, {n});
        for (int r = 0; r < p; ++r)
          h.dispatch(r, allreduce_all<T>, win, h.window<std::int32_t>(sb, {p, 4}), ins[s][r], outs[s][r]);
        // Host builtin path: stage / allreduce / collect, interleaved in program order.
        for (Index c = 0; c < ncases; ++c)
          for (int k = 0; k < kReps; ++k) {
            const ArCase ac = cases[static_cast<std::size_t>(c)];
            for (int r = 0; r < p; ++r) h.dispatch(r, stage<T>, win, ins[s][r][static_cast<Index>(ac.op)]);
            h.allreduce(win, {.op = ac.op, .mode = ac.mode, .core_num = ac.core_num});
            for (int r = 0; r < p; ++r) h.dispatch(r, collect<T>, win, host_outs[s][r][c][k]);
          }
      }
    });
    for (std::size_t s = 0; s < allreduce_sizes<T>().size(); ++s)
      for (Index c = 0; c < ncases; ++c) {
        const ArCase ac = cases[static_cast<std::size_t>(c)];
        for (Index i = 0; i < allreduce_sizes<T>()[s]; ++i) {
          const auto expect = value(golden<T>(ac.op, p, i));
          for (int r = 0; r < p; ++r)
            for (int k = 0; k < kReps; ++k) {
              ASSERT_EQ(value(outs[s](r, c, k, i)), expect)
                  << "composite P=" << p << " n=" << allreduce_sizes<T>()[s] << " case " << c << " rank " << r
                  << " rep " << k << " i " << i;
              ASSERT_EQ(value(host_outs[s](r, c, k, i)), expect)
                  << "builtin P=" << p << " n=" << allreduce_sizes<T>()[s] << " case " << c << " rank " << r;
            }
        }
      }
  });
}

// broadcast (two roots), reduce_scatter (four ops), allgather: composite then builtin path.
template <class T>
void others(DistributedTensor<T> win, DistributedTensor<T> rows, DistributedTensor<T> gathered,
            DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> rows_in, Tensor<T> out_b, Tensor<T> out_rs,
            Tensor<T> out_ag) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx);
  for (int k = 0; k < kReps; ++k) {
    const int root = k % 2 == 0 ? 0 : n - 1;
    stage(win, in);
    tensor::broadcast(win, sig, {.root = root});
    collect(win, out_b[k]);
    for (int op = 0; op < 4; ++op) {
      tensor::put(rows, me, rows_in[op]);
      tensor::reduce_scatter(rows, sig, {.op = static_cast<ReduceOp>(op), .core_num = 1 + op % 2});
      tensor::get(row_view(out_rs[k][op]), me, rows, {0, 0}, {me, 0}, {1, rows.shape()[1]});
    }
    tensor::allgather(in, gathered, sig);
    collect(gathered, out_ag[k]);
  }
}

TEST_P(Collectives, BroadcastReduceScatterAllgather) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    for (Index n : sizes<T>()) {
      auto in = HostTensor<T>::zeros({p, n});
      for (int r = 0; r < p; ++r)
        for (Index i = 0; i < n; ++i) in(r, i) = input<T>(ReduceOp::Sum, r + 11, i);
      // rows_in[r][op] is [p, n]: row q holds rank r's contribution to rank q's result.
      auto rows_in = HostTensor<T>::zeros({p, 4, p, n});
      for (int r = 0; r < p; ++r)
        for (int op = 0; op < 4; ++op)
          for (int q = 0; q < p; ++q)
            for (Index i = 0; i < n; ++i) rows_in(r, op, q, i) = input<T>(static_cast<ReduceOp>(op), r, i + q);
      auto out_b = HostTensor<T>::zeros({p, kReps, n});
      auto out_rs = HostTensor<T>::zeros({p, kReps, 4, n});
      auto out_ag = HostTensor<T>::zeros({p, kReps, p, n});
      auto hb = HostTensor<T>::zeros({p, kReps, n});
      auto hag = HostTensor<T>::zeros({p, kReps, p, n});
      auto hrs = HostTensor<T>::zeros({p, kReps, n});
      run(ranks(p), [&](Host& h) {
        auto w = h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, "win"), {n});
        auto rows = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "rows"), {p, n});
        auto g = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "gathered"), {p, n});
        auto local = h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, "local"), {n});
        auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 16}, DType::INT32, "sig"), {p, 16});
        for (int r = 0; r < p; ++r)
          h.dispatch(r, others<T>, w, rows, g, sig, in[r], rows_in[r], out_b[r], out_rs[r], out_ag[r]);
        for (int k = 0; k < kReps; ++k) {  // builtin path, explicit signal for broadcast, pld's for the rest
          for (int r = 0; r < p; ++r) h.dispatch(r, stage<T>, w, in[r]);
          h.broadcast(w, sig, {.root = k % 2 == 0 ? 0 : p - 1});
          for (int r = 0; r < p; ++r) {
            h.dispatch(r, collect<T>, w, hb[r][k]);
            h.dispatch(r, stage<T>, local, in[r]);
          }
          h.allgather(local, g);
          for (int r = 0; r < p; ++r) {
            h.dispatch(r, collect<T>, g, hag[r][k]);
            h.dispatch(r, stage<T>, rows, rows_in[r][0]);
          }
          h.reduce_scatter(rows, {.op = ReduceOp::Sum});
          for (int r = 0; r < p; ++r)
            h.dispatch(
                r,
                +[](DistributedTensor<T> rw, Tensor<T> out) {
                  const int me = rank(get_comm_ctx(rw));
                  tensor::get(row_view(out), me, rw, {0, 0}, {me, 0}, {1, rw.shape()[1]});
                },
                rows, hrs[r][k]);
        }
      });
      for (int r = 0; r < p; ++r)
        for (int k = 0; k < kReps; ++k) {
          const int root = k % 2 == 0 ? 0 : p - 1;
          for (Index i = 0; i < n; ++i) {
            ASSERT_EQ(value(out_b(r, k, i)), value(in(root, i))) << "broadcast P=" << p << " n=" << n;
            ASSERT_EQ(value(hb(r, k, i)), value(in(root, i))) << "builtin broadcast P=" << p << " n=" << n;
            for (int op = 0; op < 4; ++op) {
              double acc = static_cast<double>(value(rows_in(0, op, r, i)));
              for (int s = 1; s < p; ++s) {
                const double x = static_cast<double>(value(rows_in(s, op, r, i)));
                acc = op == 0 ? acc + x : op == 1 ? std::max(acc, x) : op == 2 ? std::min(acc, x) : acc * x;
              }
              ASSERT_EQ(value(out_rs(r, k, op, i)), value(static_cast<T>(static_cast<float>(acc))))
                  << "reduce_scatter op " << op << " P=" << p << " n=" << n << " rank " << r;
              if (op == 0) {
                ASSERT_EQ(value(hrs(r, k, i)), value(static_cast<T>(static_cast<float>(acc))));
              }
            }
            for (int s = 0; s < p; ++s) {
              ASSERT_EQ(value(out_ag(r, k, s, i)), value(in(s, i))) << "allgather P=" << p << " n=" << n;
              ASSERT_EQ(value(hag(r, k, s, i)), value(in(s, i))) << "builtin allgather P=" << p << " n=" << n;
            }
          }
        }
    }
  });
}

// allgather rows from 1 MiB up take the fused push (each block of local read once, streamed to
// every rank); odd lengths leave unaligned heads and tails. core_num 2 splits below 1 MiB again.
// A copy: one dtype of each width (each leaves other heads and tails) covers every path.
// Row s of the gathered window must hold rank s's input bits; each rank checks its own window and
// returns the count of rows that differ (under mpirun, megabytes of gathered rows copied back to
// the host would be merged across every process).
template <class T>
T gathered_input(std::int64_t s, std::int64_t i) {
  return input<T>(ReduceOp::Sum, s + 5, i);
}
template <class T>
std::int64_t rows_differing(DistributedTensor<T> g) {
  const Index p = g.shape()[0], n = g.shape()[1];
  std::vector<T> got(static_cast<std::size_t>(p * n)), want(static_cast<std::size_t>(n));
  tensor::get(Tensor<T>(got.data(), {p, n}), rank(get_comm_ctx(g)), g);
  std::int64_t bad = 0;
  for (Index s = 0; s < p; ++s) {
    for (Index i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] = gathered_input<T>(s, i);
    bad += std::memcmp(got.data() + s * n, want.data(), want.size() * sizeof(T)) != 0;
  }
  return bad;
}
template <class T>
void gather_large(Tensor<T> in, DistributedTensor<T> g, DistributedTensor<std::int32_t> sig, Tensor<std::int64_t> bad) {
  for (int k = 0; k < kReps; ++k) {
    tensor::allgather(in, g, sig, {.core_num = 1 + k % 2});
    bad.data()[k] = rows_differing(g);
  }
}
template <class T>
void check_gathered(DistributedTensor<T> g, Tensor<std::int64_t> bad) {
  bad.data()[kReps] = rows_differing(g);
}

class CollectivesPerWidth : public ::testing::TestWithParam<TypeAndRanks> {};

TEST_P(CollectivesPerWidth, AllgatherFusedPushFromOneMiB) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    const Index n = static_cast<Index>((1u << 20) / sizeof(T) + 3);
    auto in = HostTensor<T>::zeros({p, n});
    for (int r = 0; r < p; ++r)
      for (Index i = 0; i < n; ++i) in(r, i) = gathered_input<T>(r, i);
    auto bad = HostTensor<std::int64_t>::full({p, kReps + 1}, -1);  // kReps composite calls, then the builtin
    run(ranks(p), [&](Host& h) {
      auto g = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "gathered"), {p, n});
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 2}, DType::INT32, "sig"), {p, 2});
      for (int r = 0; r < p; ++r) h.dispatch(r, gather_large<T>, in[r], g, sig, bad[r]);
      auto local = h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, "local"), {n});
      for (int r = 0; r < p; ++r) h.dispatch(r, stage<T>, local, in[r]);
      h.allgather(local, g);
      for (int r = 0; r < p; ++r) h.dispatch(r, check_gathered<T>, g, bad[r]);
    });
    for (int r = 0; r < p; ++r)
      for (int k = 0; k <= kReps; ++k)
        EXPECT_EQ(bad(r, k), 0) << "P=" << p << " rank " << r << (k < kReps ? " rep " : " builtin, after ") << k
                                << ": rows whose bits differ from their rank's input";
  });
}

// A broadcast of 1 MiB and a few elements from every root onto a poisoned window: across nodes it
// goes through one member per node in chunks of 512 KiB, the last one partial.
template <class T>
void broadcast_large(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> poison,
                     Tensor<T> out) {
  const int me = rank(get_comm_ctx(win)), n = nranks(get_comm_ctx(win));
  for (int root = 0; root < n; ++root) {
    stage(win, me == root ? in : poison);
    tensor::broadcast(win, sig, {.root = root});
    collect(win, out[root]);
  }
}

TEST_P(CollectivesPerWidth, BroadcastFromEveryRootFromOneMiB) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    const Index n = static_cast<Index>((1u << 20) / sizeof(T) + 3);
    auto in = HostTensor<T>::zeros({n});
    auto poison = HostTensor<T>::zeros({n});
    for (Index i = 0; i < n; ++i) {
      in(i) = input<T>(ReduceOp::Sum, 7, i);
      poison(i) = static_cast<T>(static_cast<float>(-1));
    }
    auto out = HostTensor<T>::zeros({p, p, n});
    run(ranks(p), [&](Host& h) {
      auto w = h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, "win"), {n});
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 2}, DType::INT32, "sig"), {p, 2});
      for (int r = 0; r < p; ++r) h.dispatch(r, broadcast_large<T>, w, sig, in, poison, out[r]);
    });
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);  // a copy: compare bits
    for (int r = 0; r < p; ++r)
      for (int root = 0; root < p; ++root)
        ASSERT_EQ(std::memcmp(out[r][root].data(), in.data(), bytes), 0)
            << "P=" << p << " rank " << r << " root " << root;
  });
}

// An allreduce of a few hundred KiB and a few elements, every op: across nodes the vector travels
// in several eager pieces, each reduced as soon as it has come from every member.
template <class T>
void allreduce_ops(DistributedTensor<T> win, DistributedTensor<std::int32_t> sig, Tensor<T> in, Tensor<T> out) {
  for (int op = 0; op < 4; ++op) {
    stage(win, in[op]);
    tensor::allreduce(win, sig, {.op = static_cast<ReduceOp>(op)});
    collect(win, out[op]);
  }
}

TEST_P(CollectivesPerWidth, AllreduceInManyPiecesEveryOp) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    const Index n = static_cast<Index>((200u << 10) / sizeof(T) + 3);
    auto in = make_inputs<T>(p, n);
    auto out = HostTensor<T>::zeros({p, 4, n});
    run(ranks(p), [&](Host& h) {
      auto w = h.window<T>(h.alloc_window_buffer({n}, dtype_of<T>, "win"), {n});
      auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 2}, DType::INT32, "sig"), {p, 2});
      for (int r = 0; r < p; ++r) h.dispatch(r, allreduce_ops<T>, w, sig, in[r], out[r]);
    });
    for (int op = 0; op < 4; ++op)
      for (Index i = 0; i < n; ++i) {
        const auto expect = value(golden<T>(static_cast<ReduceOp>(op), p, i));
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(value(out(r, op, i)), expect) << "op " << op << " P=" << p << " rank " << r << " i " << i;
      }
  });
}

// all_to_all and all_to_all_v, composite then builtin path.
template <class T>
void exchange(DistributedTensor<T> target, DistributedTensor<T> vtarget, DistributedTensor<std::int32_t> sig,
              DistributedTensor<std::int32_t> recv, Tensor<T> in, Tensor<T> vin, Tensor<std::int32_t> counts,
              Tensor<T> out, Tensor<T> vout, Tensor<std::int32_t> rcounts) {
  const int me = rank(get_comm_ctx(target));
  for (int k = 0; k < kReps; ++k) {
    tensor::all_to_all(in, target, sig);
    collect(target, out[k]);
    tensor::all_to_all_v(vin, vtarget, sig, counts, recv);
    collect(vtarget, vout[k]);
    tensor::get(rcounts[k], me, recv);
  }
}

TEST_P(Collectives, AllToAllAndAllToAllV) {
  const int p = GetParam().p;
  PLD_REQUIRE_RANKS(p);
  with_type(AllTypes{}, GetParam().dtype, [&]<class T>() {
    constexpr Index kMaxRecv = 3;
    for (Index n : sizes<T>()) {
      if (n > 1000) n = 1001;  // p x p blocks: keep the large case moderate
      auto in = HostTensor<T>::zeros({p, p, n});
      for (int r = 0; r < p; ++r)
        for (int d = 0; d < p; ++d)
          for (Index i = 0; i < n; ++i) in(r, d, i) = input<T>(ReduceOp::Sum, r * 7 + d, i);
      auto vin = HostTensor<T>::zeros({p, p * kMaxRecv, n});
      for (int r = 0; r < p; ++r)
        for (Index row = 0; row < p * kMaxRecv; ++row)
          for (Index i = 0; i < n; ++i) vin(r, row, i) = input<T>(ReduceOp::Sum, r + row, i);
      auto counts = HostTensor<std::int32_t>::zeros({p, p});
      for (int r = 0; r < p; ++r)
        for (int d = 0; d < p; ++d) counts(r, d) = (r + 2 * d) % static_cast<int>(kMaxRecv + 1);
      auto out = HostTensor<T>::zeros({p, kReps, p, n});
      auto vout = HostTensor<T>::zeros({p, kReps, p * kMaxRecv, n});
      auto rc = HostTensor<std::int32_t>::zeros({p, kReps, p, 1});
      auto hout = HostTensor<T>::zeros({p, p, n});
      auto hvout = HostTensor<T>::zeros({p, p * kMaxRecv, n});
      run(ranks(p), [&](Host& h) {
        auto t = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "target"), {p, n});
        auto vt = h.window<T>(h.alloc_window_buffer({p * kMaxRecv, n}, dtype_of<T>, "vtarget"), {p * kMaxRecv, n});
        auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "sig"), {p, 1});
        auto recv = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, DType::INT32, "recv"), {p, 1});
        for (int r = 0; r < p; ++r)
          h.dispatch(r, exchange<T>, t, vt, sig, recv, in[r], vin[r], counts[r], out[r], vout[r], rc[r]);
        // Builtin path: inputs and counts must be windows.
        auto win = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "input"), {p, n});
        auto vwin = h.window<T>(h.alloc_window_buffer({p * kMaxRecv, n}, dtype_of<T>, "vinput"), {p * kMaxRecv, n});
        auto cwin = h.window<std::int32_t>(h.alloc_window_buffer({p}, DType::INT32, "counts"), {p});
        auto t2 = h.window<T>(h.alloc_window_buffer({p, n}, dtype_of<T>, "target2"), {p, n});
        auto vt2 = h.window<T>(h.alloc_window_buffer({p * kMaxRecv, n}, dtype_of<T>, "vtarget2"), {p * kMaxRecv, n});
        for (int r = 0; r < p; ++r) {
          h.dispatch(r, stage<T>, win, in[r]);
          h.dispatch(r, stage<T>, vwin, vin[r]);
          h.dispatch(r, stage<std::int32_t>, cwin, counts[r]);
        }
        h.all_to_all(win, t2);
        h.all_to_all_v(vwin, vt2, {.send_counts = cwin, .recv_counts = recv});
        for (int r = 0; r < p; ++r) {
          h.dispatch(r, collect<T>, t2, hout[r]);
          h.dispatch(r, collect<T>, vt2, hvout[r]);
        }
      });
      for (int r = 0; r < p; ++r)
        for (int s = 0; s < p; ++s) {
          for (Index i = 0; i < n; ++i) {
            for (int k = 0; k < kReps; ++k)
              ASSERT_EQ(value(out(r, k, s, i)), value(in(s, r, i))) << "all_to_all P=" << p << " n=" << n;
            ASSERT_EQ(value(hout(r, s, i)), value(in(s, r, i))) << "builtin all_to_all P=" << p << " n=" << n;
          }
          const int cnt = counts(s, r);
          for (int k = 0; k < kReps; ++k) ASSERT_EQ(rc(r, k, s, 0), cnt) << "recv_counts P=" << p;
          for (Index row = 0; row < cnt; ++row)
            for (Index i = 0; i < n; ++i) {
              const T expect = vin(s, r * kMaxRecv + row, i);
              for (int k = 0; k < kReps; ++k)
                ASSERT_EQ(value(vout(r, k, s * kMaxRecv + row, i)), value(expect)) << "all_to_all_v P=" << p;
              ASSERT_EQ(value(hvout(r, s * kMaxRecv + row, i)), value(expect)) << "builtin all_to_all_v P=" << p;
            }
        }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(P, Collectives, ::testing::ValuesIn(every_type_and_ranks(rank_counts())), type_and_ranks_name);
INSTANTIATE_TEST_SUITE_P(P, CollectivesPerWidth,
                         ::testing::ValuesIn(types_and_ranks(::testing::Types<std::int8_t, bf16, float, std::int64_t>{},
                                                             rank_counts())),
                         type_and_ranks_name);

}  // namespace
}  // namespace pld::test
