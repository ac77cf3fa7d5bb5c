#include "amo.hpp"

#include "baseline.hpp"
#include "kernels.hpp"
#include "timer.hpp"

#include <pld/pld.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace pldbench {

namespace {

constexpr std::int64_t kDefaultIters = 100000;
// Rounds per latency batch: short enough (~10 us) that most batches escape a time slice given to
// another process, long enough that reading the clock is noise.
constexpr std::int64_t kBatch = 100;

// The latency ping-pong of ranks 0 and 1 on cell 0 of rank 1: in round i rank `me` waits until
// the cell holds 2i + me, then adds 1. A turn is pld's calls (poll with atomic_fetch, then
// atomic_fetch_add) or the bare instructions on the same cell as this process addresses it (poll
// with an acquire load, then `lock xadd`); both pause between polls, as every spin loop does
// (pld's waits too). Same processes, same cell, same loop: the two differ by pld's calls alone.
struct PingPong {
  pld::DistributedTensor<std::int64_t> cells;
  std::int64_t* bare_cell;  // nullptr where rank 1's window is not addressable (mpi backend)
  int me;
  std::int64_t wrong = 0;

  void turn(std::int64_t round, bool bare) {
    const std::int64_t want = 2 * round + me;
    if (bare) {
      std::atomic_ref<std::int64_t> cell(*bare_cell);
      while (cell.load(std::memory_order_acquire) != want) spin_pause();
      wrong += cell.fetch_add(1, std::memory_order_acq_rel) != want;
    } else {
      while (pld::system::atomic_fetch(cells, 1, {0}) != want) spin_pause();
      wrong += pld::system::atomic_fetch_add(cells, 1, {0}, std::int64_t{1}) != want;
    }
  }
  // Rounds [0, warmup + iters) in batches that alternate pld's and the bare turns (pld's alone
  // without a bare cell), so that both see the same machine at the same time; returns the
  // median ns per round of each kind over the timed batches ({pld, bare}; bare -1 if unmeasured).
  std::array<double, 2> run(std::int64_t warmup, std::int64_t iters) {
    const std::int64_t batch = std::clamp<std::int64_t>(iters / 20, 1, kBatch);
    std::vector<double> per_round[2];
    std::int64_t round = 0;
    for (std::int64_t k = 0; round < warmup + iters; ++k) {
      const bool bare = bare_cell && k % 2 == 1;
      const std::int64_t end = std::min(round + batch, warmup + iters), first = round;
      const double t0 = now_ns();
      for (; round < end; ++round) turn(round, bare);
      if (first >= warmup) per_round[bare].push_back((now_ns() - t0) / static_cast<double>(end - first));
    }
    return {median_of(per_round[0]), per_round[1].empty() ? -1.0 : median_of(per_round[1])};
  }
};

// out[0] pld's ns per latency round (rank 0), out[1] throughput loop ns, out[2] wrong, out[3] the
// bare ns per latency round (rank 0; -1 if not measured).
void amo_kernel(pld::DistributedTensor<std::int64_t> cells, pld::DistributedTensor<std::int32_t> sig,
                std::int64_t warmup, std::int64_t iters, bool pin, pld::Tensor<double> out) {
  const pld::CommCtx ctx = pld::get_comm_ctx(cells);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  pin_rank(pin, me);
  const std::int64_t total = warmup + iters;
  std::int64_t wrong = 0;
  out(3) = -1;
  if (n >= 2 && me < 2) {
    std::byte* heap = ctx.windows_in(1);
    PingPong p{cells, heap ? reinterpret_cast<std::int64_t*>(heap + cells.ref().offset) : nullptr, me};
    const std::array<double, 2> ns = p.run(warmup, iters);
    out(0) = ns[0];
    out(3) = ns[1];
    wrong += p.wrong;
  }
  out(1) = time_loop(sig, warmup, iters, [&] { pld::system::atomic_fetch_add(cells, 0, {1}, std::int64_t{1}); });
  pld::tensor::barrier(sig);
  if (me == 0) wrong += std::llabs(pld::system::atomic_fetch(cells, 0, {1}) - n * total);
  if (me == 1) wrong += std::llabs(pld::system::atomic_fetch(cells, 1, {0}) - 2 * total);
  out(2) = static_cast<double>(wrong);
}

}  // namespace

AmoResults run_amo(const Options& o) {
  AmoResults r;
  r.nranks = o.nranks;
  r.iters = o.iters > 0 ? o.iters : kDefaultIters;
  r.warmup = o.warmup >= 0 ? o.warmup : std::max<std::int64_t>(5, r.iters / 10);
  auto out = pld::HostTensor<double>::zeros({r.nranks, 4});
  pld::DistributedConfig config;
  for (int i = 0; i < r.nranks; ++i) config.device_ids.push_back(i);
  pld::run(config, [&](pld::Host& h) {
    const int p = h.world_size();
    auto cells = h.window<std::int64_t>(h.alloc_window_buffer({2}, pld::DType::INT64, "amo"), {2});
    auto sig = h.window<std::int32_t>(h.alloc_window_buffer({p, 1}, pld::DType::INT32, "amo_sig"), {p, 1});
    for (int rank = 0; rank < p; ++rank) h.dispatch(rank, amo_kernel, cells, sig, r.warmup, r.iters, o.pin, out[rank]);
  });
  double slowest = 0;
  for (int rank = 0; rank < r.nranks; ++rank) {
    slowest = std::max(slowest, out(rank, 1));
    r.wrong += static_cast<std::int64_t>(out(rank, 2));
  }
  if (r.nranks >= 2) {  // a round is two turns: a round trip
    r.latency_us = out(0, 0) / 2 / 1e3;
    if (out(0, 3) > 0) r.bare_latency_us = out(0, 3) / 2 / 1e3;
  }
  r.ns_per_op = slowest / static_cast<double>(r.iters);
  r.mops = slowest > 0 ? static_cast<double>(r.nranks) * static_cast<double>(r.iters) / slowest * 1e3 : 0;
  return r;
}

void print_amo(std::FILE* out, const AmoResults& r) {
  std::fprintf(out, "#\n# amo: atomic_fetch_add on int64 cells, %d ranks, %lld iterations (%lld warm-up)\n", r.nranks,
               static_cast<long long>(r.iters), static_cast<long long>(r.warmup));
  std::fprintf(out, "#  %-40s %12s %12s %8s\n", "measure", "pld", "bare", "ratio");
  if (r.latency_us >= 0) {
    if (r.bare_latency_us > 0)
      std::fprintf(out, "   %-40s %9.3f us %9.3f us %8.2f\n", "latency (half round trip, P=2 ping-pong)", r.latency_us,
                   r.bare_latency_us, r.latency_us / r.bare_latency_us);
    else
      std::fprintf(out, "   %-40s %9.3f us %12s %8s\n", "latency (half round trip, P=2 ping-pong)", r.latency_us, "-",
                   "-");
  }
  std::fprintf(out, "   %-40s %9.2f M/s %12s %8s\n", "throughput (every rank, one cell)", r.mops, "-", "-");
  std::fprintf(out, "   %-40s %9.1f ns %12s %8s\n", "time per fetch_add under contention", r.ns_per_op, "-", "-");
  std::fprintf(out, "# amo #wrong: %lld\n", static_cast<long long>(r.wrong));
}

void print_put_signal_ratios(std::FILE* out, const TableResult& t) {
  std::fprintf(out, "#\n# put_signal against put, same run: ns per call (median batch), ratios\n");
  std::fprintf(out, "#  %10s %11s %9s %11s %9s %15s %10s %17s %15s\n", "size (B)", "put_signal", "put", "put+notify",
               "floor", "put_signal/put", "floor/put", "put_signal/floor", "ps/(put+notify)");
  auto ns = [](const Measure& m) { return m.valid ? m.time_us * 1e3 : 0.0; };
  auto ratio = [](double a, double b) { return a > 0 && b > 0 ? a / b : 0.0; };
  for (const Row& r : t.rows) {
    const double ps = ns(r.group[0]), put = ns(r.group[1]), pn = ns(r.group[2]), floor = ns(r.group[3]);
    // The floor's columns read "-" where it is not measured (the peer's window is not addressable).
    char floor_ns[16] = "-", floor_put[16] = "-", ps_floor[16] = "-";
    if (floor > 0) {
      std::snprintf(floor_ns, sizeof floor_ns, "%.1f", floor);
      std::snprintf(floor_put, sizeof floor_put, "%.2f", ratio(floor, put));
      std::snprintf(ps_floor, sizeof ps_floor, "%.2f", ratio(ps, floor));
    }
    std::fprintf(out, "   %10llu %11.1f %9.1f %11.1f %9s %15.2f %10s %17s %15.2f\n",
                 static_cast<unsigned long long>(r.point.bytes), ps, put, pn, floor_ns, ratio(ps, put), floor_put,
                 ps_floor, ratio(ps, pn));
  }
}

}  // namespace pldbench
