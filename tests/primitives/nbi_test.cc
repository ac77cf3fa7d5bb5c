// put_signal and the non-blocking transfers (put_nbi, get_nbi, put_signal_nbi, quiet, fence) at
// P = 1, 2, 3, 4, 8: the data of a put_signal is visible when its signal is (Set and AtomicAdd,
// full-slice and region forms, 0, 1, odd and large sizes), non-blocking puts of 1..64 chunks are
// all delivered after quiet, non-blocking gets after quiet, fence orders puts to one peer, a
// kernel's end completes what it left outstanding, debug mode catches a source reused before
// quiet and a get's destination read before quiet, and bad arguments get named errors. Nothing
// here depends on timing.
#include "support.hpp"

#include <cstring>

namespace pld::test {
namespace {

using Sig = DistributedTensor<std::int32_t>;
using Win = DistributedTensor<std::int32_t>;

constexpr Index kSizes[] = {0, 1, 37, 65537};
constexpr int kRounds = 3;

std::int32_t datum(int rank, Index i, int round) {
  return static_cast<std::int32_t>(rank * 100003 + i * 7 + round * 1000003);
}

/// Mismatches between row `row` of this rank's copy of `win` and what rank `from` sent in `round`.
std::int32_t count_wrong(const Win& win, int row, int from, Index len, int round) {
  std::vector<std::int32_t> got(static_cast<std::size_t>(len) + 1);
  const int me = rank(get_comm_ctx(win));
  tensor::get(Tensor<std::int32_t>(got.data(), {1, len}), me, win, {0, 0}, {row, 0}, {1, len});
  std::int32_t wrong = 0;
  for (Index i = 0; i < len; ++i) wrong += got[static_cast<std::size_t>(i)] != datum(from, i, round);
  return wrong;
}

struct SignalCase {
  bool region;
  NotifyOp op;
  bool nbi;
};

// Rank r put_signals its data to its right neighbour kRounds times; the neighbour waits for the
// signal and checks every element, then tells r it may overwrite (row 1 of `sig`). `win` is
// [P, len] for the region form (row r is r's), [1, len] for the full-slice form.
void put_signal_ring(Win win, Sig sig, Tensor<std::int32_t> out, Index len, int region, int op, int nbi) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx), right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<std::int32_t> src(static_cast<std::size_t>(len) + 1);
  const Tensor<std::int32_t> s(src.data(), {1, len});
  std::int32_t wrong = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (Index i = 0; i < len; ++i) src[static_cast<std::size_t>(i)] = datum(me, i, round);
    const auto nop = static_cast<NotifyOp>(op);
    const std::int32_t value = nop == NotifyOp::Set ? round + 1 : 1;
    if (region && nbi)
      tensor::put_signal_nbi(win, right, s, {me, 0}, {0, 0}, {1, len}, sig, {0, me}, value, nop);
    else if (region)
      tensor::put_signal(win, right, s, {me, 0}, {0, 0}, {1, len}, sig, {0, me}, value, nop);
    else if (nbi)
      tensor::put_signal_nbi(win, right, s, sig, {0, me}, value, nop);
    else
      tensor::put_signal(win, right, s, sig, {0, me}, value, nop);
    system::wait(sig, {0, left}, round + 1, WaitCmp::Eq);
    wrong += count_wrong(win, region ? left : 0, left, len, round);
    system::notify(sig, left, {1, me}, 1, NotifyOp::AtomicAdd);  // my copy of left's data is read
    system::wait(sig, {1, right}, round + 1, WaitCmp::Eq);
    if (nbi) system::quiet();  // src is rewritten next round
  }
  tile::write(out, {0}, wrong);
}

class PutSignal : public ::testing::TestWithParam<int> {};

TEST_P(PutSignal, DataIsVisibleWhenTheSignalIs) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  std::vector<SignalCase> cases;
  for (bool region : {false, true})
    for (NotifyOp op : {NotifyOp::Set, NotifyOp::AtomicAdd})
      for (bool nbi : {false, true}) cases.push_back({region, op, nbi});
  const int total = static_cast<int>(cases.size() * std::size(kSizes));
  auto out = HostTensor<std::int32_t>::full({p, total, 1}, -1);
  run(ranks(p), [&](Host& h) {
    int k = 0;
    for (const SignalCase& c : cases)
      for (Index len : kSizes) {
        const int rows = c.region ? p : 1;
        auto w = h.alloc_window_buffer({rows, len}, DType::INT32);
        auto s = h.alloc_window_buffer({2, p}, DType::INT32);
        for (int r = 0; r < p; ++r)
          h.dispatch(r, put_signal_ring, h.window<std::int32_t>(w, {rows, len}), h.window<std::int32_t>(s, {2, p}),
                     out[r][k], len, static_cast<int>(c.region), static_cast<int>(c.op), static_cast<int>(c.nbi));
        ++k;
      }
  });
  int k = 0;
  for (const SignalCase& c : cases)
    for (Index len : kSizes) {
      for (int r = 0; r < p; ++r)
        EXPECT_EQ(out(r, k, 0), 0) << "P=" << p << " region=" << c.region << " op=" << static_cast<int>(c.op)
                                   << " nbi=" << c.nbi << " size=" << len << " rank " << r;
      ++k;
    }
}

// Rank r sends `chunks` chunks of its row to its right neighbour with put_nbi, then quiet (or
// not: notify alone is a release of them, quiet comes later), then notifies; the neighbour checks
// every element.
void nbi_chunks(Win win, Sig sig, Tensor<std::int32_t> out, Index len, int chunks, int with_quiet) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx), right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<std::int32_t> src(static_cast<std::size_t>(len));
  for (Index i = 0; i < len; ++i) src[static_cast<std::size_t>(i)] = datum(me, i, chunks);
  const Tensor<std::int32_t> s(src.data(), {1, len});
  const Index per = (len + chunks - 1) / chunks;
  for (Index at = 0; at < len; at += per)
    tensor::put_nbi(win, right, s, {me, at}, {0, at}, {1, std::min(per, len - at)});
  if (with_quiet) system::quiet();
  system::notify(sig, right, {0, me}, 1, NotifyOp::Set);
  system::wait(sig, {0, left}, 1, WaitCmp::Eq);
  tile::write(out, {0}, count_wrong(win, left, left, len, chunks));
  if (!with_quiet) system::quiet();  // src dies with this scope, before the kernel's implicit quiet
}

class Nbi : public ::testing::TestWithParam<int> {};

TEST_P(Nbi, PutsOfOneToSixtyFourChunksThenQuietThenNotifyDeliverEveryByte) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  constexpr int kChunks[] = {1, 2, 3, 7, 16, 64};
  constexpr Index kLen = 64 * 4096 + 5;  // 64 chunks of 16 KiB and a ragged tail
  const int total = static_cast<int>(std::size(kChunks)) * 2;
  auto out = HostTensor<std::int32_t>::full({p, total, 1}, -1);
  DistributedConfig config = ranks(p);
  config.heap_bytes = 256ull << 20;  // 12 windows of P rows of 1 MiB
  run(config, [&](Host& h) {
    int k = 0;
    for (int chunks : kChunks)
      for (int with_quiet : {1, 0}) {
        auto w = h.alloc_window_buffer({p, kLen}, DType::INT32);
        auto s = h.alloc_window_buffer({1, p}, DType::INT32);
        for (int r = 0; r < p; ++r)
          h.dispatch(r, nbi_chunks, h.window<std::int32_t>(w, {p, kLen}), h.window<std::int32_t>(s, {1, p}), out[r][k],
                     kLen, chunks, with_quiet);
        ++k;
      }
  });
  for (int k = 0; k < total; ++k)
    for (int r = 0; r < p; ++r)
      EXPECT_EQ(out(r, k, 0), 0) << "P=" << p << " chunks=" << kChunks[k / 2] << " quiet=" << (k % 2 == 0) << " rank "
                                 << r;
}

// Every rank fills its own row, a barrier, then get_nbi of the left neighbour's row in `chunks`
// pieces (window and rank-local destinations alternate) and one quiet.
void get_nbi_chunks(Win win, Sig sig, Tensor<std::int32_t> out, Index len, int chunks) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx), left = (me + n - 1) % n;
  std::vector<std::int32_t> mine(static_cast<std::size_t>(len)), got(static_cast<std::size_t>(len), -7);
  for (Index i = 0; i < len; ++i) mine[static_cast<std::size_t>(i)] = datum(me, i, 0);
  tensor::put(win, me, Tensor<std::int32_t>(mine.data(), {1, len}), {0, 0}, {0, 0}, {1, len});
  for (int q = 0; q < n; ++q) system::notify(sig, q, {0, me}, 1, NotifyOp::Set);
  for (int q = 0; q < n; ++q) system::wait(sig, {0, q}, 1, WaitCmp::Eq);
  const Tensor<std::int32_t> dst(got.data(), {1, len});
  const Index per = (len + chunks - 1) / chunks;
  int k = 0;
  for (Index at = 0; at < len; at += per, ++k) {
    const Index m = std::min(per, len - at);
    if (k % 2 == 0)
      tensor::get_nbi(dst, left, win, {0, at}, {0, at}, {1, m});
    else  // through my own window's row 1, then copied out after quiet
      tensor::get_nbi(win, left, win, {1, at}, {0, at}, {1, m});
  }
  system::quiet();
  std::vector<std::int32_t> staged(static_cast<std::size_t>(len));
  tensor::get(Tensor<std::int32_t>(staged.data(), {1, len}), me, win, {0, 0}, {1, 0}, {1, len});
  std::int32_t wrong = 0;
  k = 0;
  for (Index at = 0; at < len; at += per, ++k)
    for (Index i = at; i < std::min(len, at + per); ++i)
      wrong += (k % 2 == 0 ? got : staged)[static_cast<std::size_t>(i)] != datum(left, i, 0);
  // Nobody may overwrite a row before every reader has got it.
  for (int q = 0; q < n; ++q) system::notify(sig, q, {1, me}, 1, NotifyOp::Set);
  for (int q = 0; q < n; ++q) system::wait(sig, {1, q}, 1, WaitCmp::Eq);
  tile::write(out, {0}, wrong);
}

TEST_P(Nbi, GetsThenQuietHoldThePeersData) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  constexpr int kChunks[] = {1, 3, 64};
  constexpr Index kLen = 64 * 1024 + 3;
  auto out = HostTensor<std::int32_t>::full({p, 3, 1}, -1);
  run(ranks(p), [&](Host& h) {
    for (int k = 0; k < 3; ++k) {
      auto w = h.alloc_window_buffer({2, kLen}, DType::INT32);
      auto s = h.alloc_window_buffer({2, p}, DType::INT32);
      for (int r = 0; r < p; ++r)
        h.dispatch(r, get_nbi_chunks, h.window<std::int32_t>(w, {2, kLen}), h.window<std::int32_t>(s, {2, p}),
                   out[r][k], kLen, kChunks[k]);
    }
  });
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < p; ++r) EXPECT_EQ(out(r, k, 0), 0) << "P=" << p << " chunks=" << kChunks[k] << " rank " << r;
}

// Rank r puts A, then B, into the same cells of its right neighbour (non-blocking, a fence
// between): after the notify the neighbour holds B.
void fence_order(Win win, Sig sig, Tensor<std::int32_t> out, Index len) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx), right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<std::int32_t> a(static_cast<std::size_t>(len)), b(static_cast<std::size_t>(len));
  std::int32_t wrong = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (Index i = 0; i < len; ++i) {
      a[static_cast<std::size_t>(i)] = -datum(me, i, round) - 1;
      b[static_cast<std::size_t>(i)] = datum(me, i, round);
    }
    tensor::put_nbi(win, right, Tensor<std::int32_t>(a.data(), {1, len}), {me, 0}, {0, 0}, {1, len});
    system::fence();
    tensor::put_nbi(win, right, Tensor<std::int32_t>(b.data(), {1, len}), {me, 0}, {0, 0}, {1, len});
    system::notify(sig, right, {0, me}, round + 1, NotifyOp::Set);
    system::wait(sig, {0, left}, round + 1, WaitCmp::Eq);
    wrong += count_wrong(win, left, left, len, round);
    system::notify(sig, left, {1, me}, 1, NotifyOp::AtomicAdd);
    system::wait(sig, {1, right}, round + 1, WaitCmp::Eq);
    system::quiet();  // a and b are rewritten next round
  }
  tile::write(out, {0}, wrong);
}

TEST_P(Nbi, FenceOrdersPutsToOnePeer) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  constexpr Index kLens[] = {1, 3000, 50000};
  auto out = HostTensor<std::int32_t>::full({p, 3, 1}, -1);
  run(ranks(p), [&](Host& h) {
    for (int k = 0; k < 3; ++k) {
      auto w = h.alloc_window_buffer({p, kLens[k]}, DType::INT32);
      auto s = h.alloc_window_buffer({2, p}, DType::INT32);
      for (int r = 0; r < p; ++r)
        h.dispatch(r, fence_order, h.window<std::int32_t>(w, {p, kLens[k]}), h.window<std::int32_t>(s, {2, p}),
                   out[r][k], kLens[k]);
    }
  });
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < p; ++r) EXPECT_EQ(out(r, k, 0), 0) << "P=" << p << " size=" << kLens[k] << " rank " << r;
}

// The first kernel returns with its put_nbi outstanding; the second rewrites the source, then
// synchronises: the neighbour holds what the source held at the put (the first kernel's end
// completed it).
void put_nbi_and_return(Win win, Tensor<std::int32_t> src) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), right = (me + 1) % nranks(ctx);
  const Index len = src.shape()[1];
  for (Index i = 0; i < len; ++i) src.data()[i] = datum(me, i, 0);
  tensor::put_nbi(win, right, src, {me, 0}, {0, 0}, {1, len});
}

void rewrite_then_check(Win win, Sig sig, Tensor<std::int32_t> src, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), n = nranks(ctx), right = (me + 1) % n, left = (me + n - 1) % n;
  const Index len = src.shape()[1];
  std::memset(src.data(), 0x5a, static_cast<std::size_t>(len) * sizeof(std::int32_t));
  system::notify(sig, right, {0, me}, 1, NotifyOp::Set);
  system::wait(sig, {0, left}, 1, WaitCmp::Eq);
  tile::write(out, {0, 0}, count_wrong(win, left, left, len, 0));
}

TEST_P(Nbi, AKernelsEndCompletesItsOutstandingTransfers) {
  const int p = GetParam();
  PLD_REQUIRE_RANKS(p);
  constexpr Index kLen = 100000;
  auto src = HostTensor<std::int32_t>::zeros({p, 1, kLen});
  auto out = HostTensor<std::int32_t>::full({p, 1, 1}, -1);
  run(ranks(p), [&](Host& h) {
    auto w = h.alloc_window_buffer({p, kLen}, DType::INT32);
    auto s = h.alloc_window_buffer({1, p}, DType::INT32);
    for (int r = 0; r < p; ++r) h.dispatch(r, put_nbi_and_return, h.window<std::int32_t>(w, {p, kLen}), src[r]);
    for (int r = 0; r < p; ++r)
      h.dispatch(r, rewrite_then_check, h.window<std::int32_t>(w, {p, kLen}), h.window<std::int32_t>(s, {1, p}), src[r],
                 out[r]);
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(out(r, 0, 0), 0) << "P=" << p << " rank " << r;
}

// In a sub-domain peers are domain-local: domain {0, 2} of three ranks, both directions, each
// rank sending a put_signal_nbi and a put_signal to its only peer.
void sub_domain_exchange(Win win, Sig sig, Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(win);
  const int me = rank(ctx), other = 1 - me;
  const Index len = win.shape()[1];
  std::vector<std::int32_t> src(static_cast<std::size_t>(len));
  for (Index i = 0; i < len; ++i) src[static_cast<std::size_t>(i)] = datum(me, i, 0);
  const Tensor<std::int32_t> s(src.data(), {1, len});
  const Index half = len / 2;
  tensor::put_signal_nbi(win, other, s, {me, 0}, {0, 0}, {1, half}, sig, {0, me}, 1, NotifyOp::AtomicAdd);
  tensor::put_signal(win, other, s, {me, half}, {0, half}, {1, len - half}, sig, {0, me}, 1, NotifyOp::AtomicAdd);
  system::wait(sig, {0, other}, 2, WaitCmp::Eq);
  tile::write(out, {0, 0}, count_wrong(win, other, other, len, 0));
  system::quiet();
}

void idle(Tensor<std::int32_t>) {}

TEST(NbiDomains, PutSignalInASubDomain) {
  PLD_REQUIRE_RANKS(3);
  constexpr Index kLen = 20001;
  auto out = HostTensor<std::int32_t>::full({3, 1, 1}, -1);
  run(ranks(3), [&](Host& h) {
    auto d = h.domain({0, 2});
    auto w = d.alloc_window_buffer({2, kLen}, DType::INT32, "data");
    auto s = d.alloc_window_buffer({1, 2}, DType::INT32, "sig");
    for (int r : {0, 2})
      h.dispatch(r, sub_domain_exchange, d.window<std::int32_t>(w, {2, kLen}), d.window<std::int32_t>(s, {1, 2}),
                 out[r]);
    h.dispatch(1, idle, out[1]);  // not a member of the domain
  });
  EXPECT_EQ(out(0, 0, 0), 0);
  EXPECT_EQ(out(2, 0, 0), 0);
}

INSTANTIATE_TEST_SUITE_P(P, PutSignal, ::testing::ValuesIn(rank_counts(1, 8, {5})), rank_count_name);
INSTANTIATE_TEST_SUITE_P(P, Nbi, ::testing::ValuesIn(rank_counts(1, 8, {5})), rank_count_name);

// Debug mode: a source rewritten before quiet (or before the kernel's end) fails with the put.
void reuse_source(Win win, int before_quiet) {
  if (before_quiet < 0) return;  // the other rank
  const int me = rank(get_comm_ctx(win));
  std::vector<std::int32_t> src(64, 1);
  tensor::put_nbi(win, me, Tensor<std::int32_t>(src.data(), {1, 64}));
  src[5] = 2;
  if (before_quiet) system::quiet();
}

TEST(NbiDebug, ASourceReusedBeforeQuietIsCaught) {
  PLD_REQUIRE_RANKS(2);
  ScopedEnv debug("PLD_DEBUG", "1");
  for (int before_quiet : {1, 0}) {
    expect_rank_error(
        [&] {
          run(ranks(2), [&](Host& h) {
            auto w = h.alloc_window_buffer({1, 64}, DType::INT32);
            h.dispatch(0, reuse_source, h.window<std::int32_t>(w, {1, 64}), before_quiet);
            h.dispatch(1, reuse_source, h.window<std::int32_t>(w, {1, 64}), -1);
          });
        },
        0, RankFailure::KernelError,
        before_quiet ? "system::quiet: the source of tensor::put_nbi to peer 0" : "the end of the kernel");
  }
}

// Debug mode: a get_nbi destination read before quiet fails with the read and the get. `how`:
// 0 tile::load of the window destination, 1 tile::read of a rank-local destination, 2 a put whose
// source is the destination, 3 a region get read outside its region (passes), 4 the reads after
// quiet (pass).
void read_early(Win win, int how) {
  if (how < 0) return;  // the other rank
  const int me = rank(get_comm_ctx(win));
  // Outlives the kernel: the failed kernel's gets are completed at the end of the call (mpi: the
  // replies land after the kernel has thrown).
  static std::vector<std::int32_t> local(64, 0);
  const Tensor<std::int32_t> dst(local.data(), {1, 64});
  switch (how) {
    case 0: tensor::get_nbi(win, 1, win, {1, 0}, {0, 0}, {1, 64}); break;
    case 1:
    case 2:
    case 4: tensor::get_nbi(dst, 1, win, {0, 0}, {0, 0}, {1, 64}); break;
    case 3: tensor::get_nbi(dst, 1, win, {0, 0}, {0, 0}, {1, 32}); break;
  }
  if (how == 4) system::quiet();
  if (how == 0) (void)tile::load(win, {1, 16}, {1, 4});
  if (how == 1 || how == 3 || how == 4) (void)tile::read(dst, {0, how == 3 ? 40 : 5});
  if (how == 2 || how == 4) tensor::put(win, me, dst, {0, 0}, {0, 0}, {1, 64});
  system::quiet();
}

TEST(NbiDebug, AGetDestinationReadBeforeQuietIsCaught) {
  PLD_REQUIRE_RANKS(2);
  ScopedEnv debug("PLD_DEBUG", "1");
  const char* needles[] = {
      "tile::load: reads the destination of tensor::get_nbi from peer 1 of window 'win'",
      "tile::read: reads the destination of tensor::get_nbi from peer 1 of window 'win' (256 bytes)",
      "tensor::put: reads the destination of tensor::get_nbi from peer 1"};
  auto body = [](int how) {
    run(ranks(2), [&](Host& h) {
      auto w = h.alloc_window_buffer({2, 64}, DType::INT32, "win");
      h.dispatch(0, read_early, h.window<std::int32_t>(w, {2, 64}), how);
      h.dispatch(1, read_early, h.window<std::int32_t>(w, {2, 64}), -1);
    });
  };
  for (int how = 0; how < 3; ++how) expect_rank_error([&] { body(how); }, 0, RankFailure::KernelError, needles[how]);
  EXPECT_NO_THROW(body(3));
  EXPECT_NO_THROW(body(4));
}

// Bad arguments: named errors, on the host or from the rank.
void bad_put_signal(Win win, Sig sig, Sig other, int which) {
  std::vector<std::int32_t> src(8);
  const Tensor<std::int32_t> s(src.data(), {1, 8});
  switch (which) {
    case 0: tensor::put_signal(win, 9, s, sig, {0, 0}, 1, NotifyOp::Set); break;
    case 1: tensor::put_signal(win, 0, s, sig, {0, 4}, 1, NotifyOp::Set); break;
    case 2: tensor::put_signal(win, 0, s, sig, {0, 0}, 1, static_cast<NotifyOp>(9)); break;
    case 3: tensor::put_signal(win, 0, s, other, {0, 0}, 1, NotifyOp::Set); break;
    case 4: tensor::put_signal_nbi(win, 0, s, {0, 4}, {0, 0}, {1, 8}, sig, {0, 0}, 1, NotifyOp::Set); break;
    case 5: tensor::put_nbi(win, 0, s, {0, 4}, {0, 0}, {1, 8}); break;
    case 6: tensor::get_nbi(s, 3, win); break;
    case 7: tensor::put_nbi(win, 0, s, PutOptions{.pipeline = true}); break;
    case 8: tensor::put_nbi(win, 0, s, PutOptions{.atomic = AtomicType::Add, .chunk_rows = -1}); break;
  }
}

TEST(NbiErrors, BadArgumentsAreNamed) {
  PLD_REQUIRE_RANKS(2);
  const char* needles[] = {"tensor::put_signal(signal 'sig', offsets [0, 0]): peer 9 out of range [0, 2)",
                           "tensor::put_signal(signal 'sig', offsets [0, 4]): signal cell exceeds dimension 1",
                           "op 9 must be NotifyOp::AtomicAdd or NotifyOp::Set",
                           "the signal of a put_signal is a window of dst's comm domain",
                           "tensor::put_signal_nbi: dst subregion exceeds dimension 1",
                           "tensor::put_nbi: dst subregion exceeds dimension 1",
                           "tensor::get_nbi: peer 3 out of range [0, 2)",
                           "tensor::put_nbi: pipeline=true requires both chunk_rows>0 and chunk_cols>0",
                           "tensor::put_nbi: chunk_rows -1 must be non-negative"};
  for (int which = 0; which < static_cast<int>(std::size(needles)); ++which) {
    expect_rank_error(
        [&] {
          run(ranks(2), [&](Host& h) {
            auto w = h.alloc_window_buffer({1, 8}, DType::INT32, "win");
            auto s = h.alloc_window_buffer({1, 2}, DType::INT32, "sig");
            auto one = h.domain({0});
            auto o = one.alloc_window_buffer({1, 2}, DType::INT32, "other");
            h.dispatch(0, bad_put_signal, h.window<std::int32_t>(w, {1, 8}), h.window<std::int32_t>(s, {1, 2}),
                       one.window<std::int32_t>(o, {1, 2}), which);
            h.dispatch(1, bad_put_signal, h.window<std::int32_t>(w, {1, 8}), h.window<std::int32_t>(s, {1, 2}),
                       h.window<std::int32_t>(s, {1, 2}), -1);
          });
        },
        0, RankFailure::KernelError, needles[which]);
  }
}

TEST(NbiErrors, QuietAndFenceOutsideAKernel) {
  EXPECT_THROW(
      {
        try {
          system::quiet();
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("system::quiet: called outside a kernel"), std::string::npos)
              << e.what();
          throw;
        }
      },
      UsageError);
  EXPECT_THROW(
      {
        try {
          system::fence();
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("system::fence: called outside a kernel"), std::string::npos)
              << e.what();
          throw;
        }
      },
      UsageError);
}

}  // namespace
}  // namespace pld::test
