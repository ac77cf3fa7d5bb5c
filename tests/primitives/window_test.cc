// Windows of different comm domains: a notify on one domain's signal publishes data written into
// another domain's window (under the mpi backend these are two MPI windows, so the release must
// flush both and the wait must synchronise both), and a persistent worker keeps a domain's data
// when a later call needs that domain's window to grow.
#include "support.hpp"

#include <vector>

namespace pld::test {
namespace {

int world_here(int fallback) {
  const int n = launcher_world_size();
  return n > 0 ? n : fallback;
}

std::int32_t pattern(int round, int from, Index i) {
  return static_cast<std::int32_t>(round * 1000003 + from * 7919 + i);
}

// Rank 0 puts `n` elements into the last rank's world buffer, then signals it on the signal
// window of the domain {0, last}; the last rank checks every element in its own world buffer and
// confirms on the same signal. Three rounds; other ranks idle.
void publish_across(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig,
                    Tensor<std::int32_t> wrong) {
  const int me = rank(get_comm_ctx(data)), last = nranks(get_comm_ctx(data)) - 1;
  const Index n = data.shape()[1];
  wrong(0) = 0;
  for (int round = 1; round <= 3; ++round) {
    if (me == 0) {
      auto t = tile::full<std::int32_t>({1, n}, 0);
      for (Index i = 0; i < n; ++i) t(0, i) = pattern(round, last, i);
      tile::remote_store(t, data, last, {0, 0});
      system::notify(sig, 1, {0}, round, NotifyOp::Set);
      system::wait(sig, {1}, round, WaitCmp::Eq);  // confirmed before the next round overwrites
    } else {
      system::wait(sig, {0}, round, WaitCmp::Eq);
      auto t = tile::remote_load(data, me, {0, 0}, {1, n});
      for (Index i = 0; i < n; ++i) wrong(0) += t(0, i) != pattern(round, me, i);
      system::notify(sig, 0, {1}, round, NotifyOp::Set);
    }
  }
}
void idle(DistributedTensor<std::int32_t>, Tensor<std::int32_t> wrong) {
  wrong(0) = 0;
}

TEST(Windows, NotifyInOneDomainPublishesDataOfAnother) {
  const int p = world_here(3);
  if (p < 2) GTEST_SKIP() << "needs 2 ranks";
  for (Index n : {Index{1}, Index{1000}, Index{300000}}) {  // up to 1.2 MB
    auto wrong = HostTensor<std::int32_t>::full({p, 1}, -1);
    run(ranks(p), [&](Host& h) {
      auto data = h.window<std::int32_t>(h.alloc_window_buffer({1, n}, DType::INT32, "data"), {1, n});
      auto pair = h.domain({0, p - 1});
      auto sig = pair.window<std::int32_t>(pair.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
      h.dispatch(0, publish_across, data, sig, wrong[0]);
      for (int r = 1; r + 1 < p; ++r) h.dispatch(r, idle, data, wrong[r]);
      h.dispatch(p - 1, publish_across, data, sig, wrong[p - 1]);
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(wrong(r, 0), 0) << "rank " << r << ", " << n << " elements";
  }
}

// Program A: every member adds 1 to its own cell of a persistent buffer of domain {0, 1} (or the
// world at P = 1) and reports the new value. Program B: the same domain allocates `big` more
// bytes (another program's buffers lie above A's, so the domain's window must grow) and every
// member writes to it.
void bump(DistributedTensor<std::int32_t> w, Tensor<std::int32_t> out) {
  const int me = rank(get_comm_ctx(w));
  auto t = tile::remote_load(w, me, {0, 0}, {1, 1});
  out(0) = t(0, 0) + 1;
  t(0, 0) = out(0);
  tile::remote_store(t, w, me, {0, 0});
}
void fill(DistributedTensor<std::int8_t> w) {
  const int me = rank(get_comm_ctx(w));
  auto t = tile::full<std::int8_t>({1, w.shape()[1]}, 7);
  tile::remote_store(t, w, me, {0, 0});
}
std::vector<int> pair_of(int p) {
  return p >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
}
void program_a(Host& h, HostTensor<std::int32_t>& out) {
  auto d = h.domain(pair_of(h.world_size()));
  auto w = d.window<std::int32_t>(d.alloc_window_buffer({1, 16}, DType::INT32, "count"), {1, 16});
  for (int r : d.ranks()) h.dispatch(r, bump, w, out[r]);
}
void program_b(Host& h, std::int64_t big) {
  auto d = h.domain(pair_of(h.world_size()));
  auto w = d.window<std::int8_t>(d.alloc_window_buffer(static_cast<std::uint64_t>(big), "big"), {1, big});
  for (int r : d.ranks()) h.dispatch(r, fill, w);
}

TEST(Windows, PersistentDataSurvivesAGrowingDomainWindow) {
  const int p = world_here(2);
  DistributedWorker rt(ranks(p), WorkerOptions{.persistent = true, .reset_persistent_windows = false}, program_a,
                       program_b);
  auto out = HostTensor<std::int32_t>::zeros({p, 1});
  const int members = std::min(p, 2);
  auto expect_count = [&](std::int32_t v) {
    for (int r = 0; r < members; ++r) EXPECT_EQ(out(r, 0), v) << "rank " << r;
  };
  rt.run(program_a, out);
  expect_count(1);
  rt.run(program_b, std::int64_t{3} << 20);  // 3 MiB above A's buffer
  rt.run(program_a, out);
  expect_count(2);
  // A pld::run call in between, over the same ranks and domain, does not touch the worker's windows.
  run(ranks(p), [](Host& h) { program_b(h, std::int64_t{1} << 20); });
  rt.run(program_b, std::int64_t{3} << 20);
  rt.run(program_a, out);
  expect_count(3);
}

// Every member stores `round` in its cell, signals every member, waits for all, and sums.
void domain_round(DistributedTensor<std::int32_t> data, DistributedTensor<std::int32_t> sig, std::int32_t round,
                  Tensor<std::int32_t> out) {
  auto ctx = get_comm_ctx(data);
  const int me = rank(ctx), n = nranks(ctx);
  tile::remote_store(tile::full<std::int32_t>({1, 1}, round), data, me, {0, 0});
  for (int q = 0; q < n; ++q) system::notify(sig, q, {me}, 1, NotifyOp::Set);
  for (int q = 0; q < n; ++q) system::wait(sig, {q}, 1, WaitCmp::Eq);
  std::int32_t sum = 0;
  for (int q = 0; q < n; ++q) sum += tile::remote_load(data, q, {0, 0}, {1, 1})(0, 0);
  out(0) = sum;
}

// Program C: the world and a second domain with the same members; the second one's counter
// persists while the world domain takes part in some calls only (each domain keeps its own
// window whatever the other does).
void touch(DistributedTensor<std::int32_t> w) {
  const int me = rank(get_comm_ctx(w));
  tile::remote_store(tile::full<std::int32_t>({1, 1}, me), w, me, {0, 0});
}
void program_c(Host& h, HostTensor<std::int32_t>& out, bool use_world) {
  auto world = h.window<std::int32_t>(h.alloc_window_buffer({1, 4}, DType::INT32, "w"), {1, 4});
  std::vector<int> all(static_cast<std::size_t>(h.world_size()));
  for (int r = 0; r < h.world_size(); ++r) all[static_cast<std::size_t>(r)] = r;
  auto twin = h.domain(all);
  auto count = twin.window<std::int32_t>(twin.alloc_window_buffer({1, 16}, DType::INT32, "count"), {1, 16});
  for (int r = 0; r < h.world_size(); ++r) {
    if (use_world) h.dispatch(r, touch, world);
    h.dispatch(r, bump, count, out[r]);
  }
}

TEST(Windows, PersistentDomainKeepsItsWindowWhenATwinSitsOut) {
  const int p = world_here(2);
  DistributedWorker rt(ranks(p), WorkerOptions{.persistent = true, .reset_persistent_windows = false}, program_c);
  auto out = HostTensor<std::int32_t>::zeros({p, 1});
  std::int32_t expected = 0;
  for (bool use_world : {true, false, true, false}) {
    rt.run(program_c, out, use_world);
    ++expected;
    for (int r = 0; r < p; ++r) EXPECT_EQ(out(r, 0), expected) << "rank " << r << ", world used: " << use_world;
  }
}

// A domain used once, then idle for many calls (under mpi its window is freed after 32 unused
// calls, CTest mpi.shm.p2.idle_windows checks the log), then used again: a fresh window, right
// results.
void pair_sum(Host& h, HostTensor<std::int32_t>& out, int round) {
  auto d = h.domain(pair_of(h.world_size()));
  auto data = d.window<std::int32_t>(d.alloc_window_buffer({1, 1}, DType::INT32, "data"), {1, 1});
  auto sig = d.window<std::int32_t>(d.alloc_window_buffer({2}, DType::INT32, "sig"), {2});
  for (int r : d.ranks()) h.dispatch(r, domain_round, data, sig, round, out[r]);
}
void world_only(Host& h) {
  auto w = h.window<std::int32_t>(h.alloc_window_buffer({1, 4}, DType::INT32, "w"), {1, 4});
  for (int r = 0; r < h.world_size(); ++r) h.dispatch(r, touch, w);
}

TEST(Windows, ADomainIdleForManyCallsWorksAgain) {
  const int p = world_here(2);
  auto out = HostTensor<std::int32_t>::zeros({p, 1});
  const int members = std::min(p, 2);
  run(ranks(p), [&](Host& h) { pair_sum(h, out, 1); });
  for (int r = 0; r < members; ++r) EXPECT_EQ(out(r, 0), members * 1);
  for (int call = 0; call < 40; ++call) run(ranks(p), world_only);
  run(ranks(p), [&](Host& h) { pair_sum(h, out, 7); });
  for (int r = 0; r < members; ++r) EXPECT_EQ(out(r, 0), members * 7);
}

}  // namespace
}  // namespace pld::test
