#include "amo.hpp"

#include "baseline.hpp"
#include "kernels.hpp"
#include "timer.hpp"

#include <pld/pld.hpp>

#include <algorithm>
#include <thread>

namespace pldbench {

namespace {

constexpr std::int64_t kDefaultIters = 100000;

// out[0] latency loop ns (rank 0), out[1] throughput loop ns, out[2] wrong.
void amo_kernel(pld::DistributedTensor<std::int64_t> cells, pld::DistributedTensor<std::int32_t> sig,
                std::int64_t warmup, std::int64_t iters, bool pin, pld::Tensor<double> out) {
  const pld::CommCtx ctx = pld::get_comm_ctx(cells);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  pin_rank(pin, me);
  const std::int64_t total = warmup + iters;
  std::int64_t wrong = 0;
  if (n >= 2 && me < 2) {  // latency: cell 0 of rank 1, turns 2i (rank 0) and 2i+1 (rank 1)
    // The turn of bare_xadd_pingpong_us with pld's calls in place of the bare instructions: poll
    // the cell, pausing between polls as a spin loop does (pld's waits and the baseline's alike),
    // then add 1. The cell sits alone on its cache line, as the baseline's does (windows are
    // 64-byte aligned; the second cell is untouched here). The ratio is the library's cost alone.
    double t0 = now_ns();
    for (std::int64_t i = 0; i < total; ++i) {
      if (i == warmup) t0 = now_ns();
      const std::int64_t want = 2 * i + me;
      while (pld::system::atomic_fetch(cells, 1, {0}) != want) spin_pause();
      wrong += pld::system::atomic_fetch_add(cells, 1, {0}, std::int64_t{1}) != want;
    }
    out(0) = now_ns() - t0;
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
  if (r.nranks >= 2 && pld::launcher_world_size() == 0)
    r.bare_latency_us = bare_xadd_pingpong_us(r.warmup, r.iters, o.pin);
  auto out = pld::HostTensor<double>::zeros({r.nranks, 3});
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
  if (r.nranks >= 2) r.latency_us = out(0, 0) / static_cast<double>(r.iters) / 2 / 1e3;
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
  std::fprintf(out, "#\n# put_signal against put, same run: ns per call, ratios to put\n");
  std::fprintf(out, "#  %10s %11s %9s %11s %9s %15s %10s %15s\n", "size (B)", "put_signal", "put", "put+notify",
               "floor", "put_signal/put", "floor/put", "put+notify/put");
  auto ns = [](const Measure& m) { return m.valid ? m.time_us * 1e3 : 0.0; };
  auto ratio = [](double a, double b) { return a > 0 && b > 0 ? a / b : 0.0; };
  for (const Row& r : t.rows) {
    const double ps = ns(r.group[0]), put = ns(r.group[1]), pn = ns(r.group[2]), floor = ns(r.group[3]);
    std::fprintf(out, "   %10llu %11.1f %9.1f %11.1f %9.1f %15.2f %10.2f %15.2f\n",
                 static_cast<unsigned long long>(r.point.bytes), ps, put, pn, floor, ratio(ps, put), ratio(floor, put),
                 ratio(pn, put));
  }
}

}  // namespace pldbench
