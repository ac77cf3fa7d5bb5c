// pld-bench-shmem — the pld side of the SHMEM primitives benchmark: the rows, sizes, timing and
// checks of bench/peers/shmem_oshmem.c (Open MPI's OpenSHMEM), written with pld's primitives in
// kernels, so every row compares like with like. One pld::run of -g ranks (forked, shm backend);
// the point-to-point rows run between ranks 0 and 1 (any other rank only joins the barriers).
//
//   put          tensor::put + system::quiet per call (rank 0 -> rank 1)
//   get          tensor::get per call (rank 0 <- rank 1)
//   put_bw       a window of 64 tensor::put_nbi, then system::quiet; us per put and GB/s
//   get_bw       the same with tensor::get_nbi
//   fetch_add    ping-pong of ranks 0 and 1 on one int64 cell of rank 1: in round i rank `me`
//                polls with atomic_fetch until the cell holds 2i + me, then atomic_fetch_add(1);
//                us = half a round trip (one turn)
//   compare_swap the same turn with atomic_compare_swap(2i + me -> 2i + me + 1)
//   put_signal   ping-pong: rank 0 tensor::put_signal(Set)s `bytes` to rank 1, rank 1
//                system::wait(Ge)s and answers alike; us = half a round trip
//   barrier_all  tensor::barrier
//   allreduce    tensor::allreduce (fp32 Sum, in place, as OSHMEM's in-place sum_to_all)
//   broadcast    tensor::broadcast from rank 0 (in place; every rank is checked)
//   allgather    tensor::allgather; bytes = the gathered [P, SIZE] target (fcollect32: bytes / 4 / P)
//   all_to_all   tensor::all_to_all; bytes = one rank's [P, SIZE] input (alltoall32: bytes / 4 / P)
// Sizes are pld-bench's: the bytes of one rank's buffer, whole fp32 elements, and for allgather
// and all_to_all a whole number of elements per rank; -b, -b*f, ... up to -e, and -e itself.
//
// Timing (pld-bench's rules, tools/pld-bench/rules.hpp): iterations = budget (1 GiB) / bytes in
// [20, 20000] (the bandwidth rows: / (64 * bytes)); warm-up = iterations / 10, at least 5, the
// first row of the process as many as it times; then a barrier and the timed loop on
// steady_clock (CLOCK_MONOTONIC), all inside ONE kernel per rank and row. us = max over ranks of
// loop time / iterations (the point-to-point rows: rank 0's). After timing each row re-stages
// small integers, runs once and compares; a wrong value is reported on stderr and the exit
// status is 1.
//
//   cmake --build build-release -j2 --target pld-bench-shmem
//   build-release/bench/peers/pld-bench-shmem -g 2 -J pld2.json
//   build-release/bench/peers/pld-bench-shmem -g 4 --ops barrier_all,allreduce,broadcast,allgather,all_to_all
//   Options: --ops LIST  -b/-e/-f sizes (K/M/G; default 8, 1M, 4)  -n iters (0 = auto)  -g ranks
//            --quick (8 B - 4 KiB by 8, at most 500 iterations)  -J/--json FILE
// CTest's bench.peers.shmem.smoke runs --quick at 2 ranks.
// Output: a table on stdout; -J writes one JSON object per row (side "pld").
#include "rules.hpp"  // tools/pld-bench/rules.hpp

#include <pld/pld.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace shmembench {

enum Op { PUT, GET, PUT_BW, GET_BW, FADD, CSWAP, PSIG, BARRIER, ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, NOPS };
constexpr const char* kOps[NOPS] = {"put",        "get",         "put_bw",    "get_bw",    "fetch_add", "compare_swap",
                                    "put_signal", "barrier_all", "allreduce", "broadcast", "allgather", "all_to_all"};
constexpr int kWindow = 64;
constexpr std::int64_t kMinIters = 20, kMaxIters = 20000;

struct Row {
  int op = PUT;
  std::uint64_t bytes = 0;
  std::int64_t warmup = 0, iters = 0;
};

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
void pause_cpu() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

template <class T>
T* local_of(const pld::DistributedTensor<T>& w) {
  const pld::CommCtx ctx = pld::get_comm_ctx(w);
  std::byte* base = ctx.windows_in(pld::rank(ctx));
  if (!base)
    throw std::runtime_error("pld-bench-shmem: the rank's own window is not addressable (run on the shm backend)");
  return reinterpret_cast<T*>(base + w.ref().offset);
}

// Small-integer patterns, the same as shmem_oshmem.c's.
unsigned char pbyte(std::uint64_t i, int r) {
  return static_cast<unsigned char>((i * 7 + static_cast<std::uint64_t>(r) * 3 + 1) % 251);
}
float fval(int src, int dst, std::uint64_t i) {
  return static_cast<float>(src * 1000 + dst * 10 + static_cast<int>(i % 7));
}
long wrong_bytes(const Row& a, const unsigned char* p, int me, int r) {
  long bad = 0;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < a.bytes; ++i)
    if (p[i] != pbyte(i, r) && bad++ == 0) first = i;
  if (bad)
    std::fprintf(stderr, "pld-bench-shmem: %s %llu B: rank %d holds %ld wrong bytes (first at %llu: %d, want %d)\n",
                 kOps[a.op], static_cast<unsigned long long>(a.bytes), me, bad, static_cast<unsigned long long>(first),
                 p[first], pbyte(first, r));
  return bad;
}

template <class Body>
double timed(const pld::DistributedTensor<std::int32_t>& sig, const Row& a, Body&& body) {
  for (std::int64_t i = 0; i < a.warmup; ++i) body();
  pld::tensor::barrier(sig);
  const double t0 = now_ns();
  for (std::int64_t i = 0; i < a.iters; ++i) body();
  return now_ns() - t0;
}

// The point-to-point rows. out[0] the loop ns, out[1] the wrong values.
void p2p_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                pld::DistributedTensor<std::int64_t> cells, pld::DistributedTensor<std::int32_t> sig,
                pld::DistributedTensor<std::int32_t> ping, pld::Tensor<double> out, Row a) {
  const int me = pld::rank(pld::get_comm_ctx(sig));
  const bool active = me < 2;
  unsigned char *d = local_of(data), *s = local_of(aux);
  for (std::uint64_t i = 0; i < a.bytes; ++i) s[i] = pbyte(i, me);
  std::memset(d, 0, a.bytes);
  pld::system::atomic_set(cells, me, {0}, std::int64_t{0});
  pld::system::notify(ping, me, {0}, 0, pld::NotifyOp::Set);
  pld::tensor::barrier(sig);
  double t = 0;
  long wrong = 0;
  if (a.op == FADD || a.op == CSWAP || a.op == PSIG) {
    const std::int64_t total = a.warmup + a.iters;
    double t0 = 0;
    for (std::int64_t r = 0; r < total && active; ++r) {
      if (r == a.warmup) t0 = now_ns();
      if (a.op == PSIG) {
        const auto v = static_cast<std::int32_t>(r + 1);
        if (me == 0) pld::tensor::put_signal(data, 1, aux, ping, {0}, v, pld::NotifyOp::Set);
        pld::system::wait(ping, {0}, v, pld::WaitCmp::Ge);
        if (me == 1) pld::tensor::put_signal(data, 0, aux, ping, {0}, v, pld::NotifyOp::Set);
      } else {
        const std::int64_t want = 2 * r + me;
        while (pld::system::atomic_fetch(cells, 1, {0}) != want) pause_cpu();
        const std::int64_t got = a.op == FADD ? pld::system::atomic_fetch_add(cells, 1, {0}, std::int64_t{1})
                                              : pld::system::atomic_compare_swap(cells, 1, {0}, want, want + 1);
        wrong += got != want;
      }
    }
    t = active ? now_ns() - t0 : 0;
    pld::tensor::barrier(sig);
    const std::int64_t end = me == 1 && a.op != PSIG ? pld::system::atomic_fetch(cells, 1, {0}) : 2 * total;
    if (end != 2 * total) {
      std::fprintf(stderr, "pld-bench-shmem: %s: the cell ends at %lld, want %lld\n", kOps[a.op],
                   static_cast<long long>(end), static_cast<long long>(2 * total));
      ++wrong;
    }
    if (a.op == PSIG && active) wrong += wrong_bytes(a, d, me, 1 - me);
  } else {
    switch (a.op) {
      case PUT:
        t = timed(sig, a, [&] {
          if (me != 0) return;
          pld::tensor::put(data, 1, aux);
          pld::system::quiet();
        });
        break;
      case GET:
        t = timed(sig, a, [&] {
          if (me == 0) pld::tensor::get(data, 1, aux);
        });
        break;
      default:  // the bandwidth rows
        t = timed(sig, a, [&] {
          if (me != 0) return;
          for (int k = 0; k < kWindow; ++k) {
            if (a.op == PUT_BW)
              pld::tensor::put_nbi(data, 1, aux);
            else
              pld::tensor::get_nbi(data, 1, aux);
          }
          pld::system::quiet();
        });
    }
    // The check: poison the target, move once, compare (put: at rank 1; get: at rank 0).
    const bool is_put = a.op == PUT || a.op == PUT_BW;
    pld::tensor::barrier(sig);
    if (active) std::memset(d, 0xee, a.bytes);
    pld::tensor::barrier(sig);
    if (me == 0) {
      if (is_put)
        pld::tensor::put_nbi(data, 1, aux);
      else
        pld::tensor::get_nbi(data, 1, aux);
      pld::system::quiet();
    }
    pld::tensor::barrier(sig);
    if (me == (is_put ? 1 : 0)) wrong += wrong_bytes(a, d, me, 1 - me);
  }
  pld::tensor::barrier(sig);
  out.data()[0] = t;
  out.data()[1] = static_cast<double>(wrong);
}

void collective(int op, const pld::DistributedTensor<float>& data, const pld::DistributedTensor<float>& aux,
                const pld::DistributedTensor<std::int32_t>& sig) {
  switch (op) {
    case BARRIER: pld::tensor::barrier(sig); break;
    case ALLREDUCE: pld::tensor::allreduce(data, sig); break;
    case BCAST: pld::tensor::broadcast(data, sig, {.root = 0}); break;
    case ALLGATHER: pld::tensor::allgather(aux, data, sig); break;
    default: pld::tensor::all_to_all(aux, data, sig); break;
  }
}

// The collective rows: the timed loop, then stage, run once and compare (data poisoned first).
void coll_kernel(pld::DistributedTensor<float> data, pld::DistributedTensor<float> aux,
                 pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double> out, Row a) {
  const pld::CommCtx ctx = pld::get_comm_ctx(sig);
  const int me = pld::rank(ctx), np = pld::nranks(ctx);
  float *t = local_of(data), *s = local_of(aux);
  const std::uint64_t n = a.op == BARRIER ? 0 : a.bytes / 4, per = n / static_cast<std::uint64_t>(np);
  const std::uint64_t naux = a.op == ALLGATHER ? per : a.op == ALLTOALL ? n : 0;
  for (std::uint64_t i = 0; i < n; ++i) t[i] = fval(me, 0, i);
  for (std::uint64_t i = 0; i < naux; ++i) s[i] = fval(me, 0, i);
  const double ns = timed(sig, a, [&] { collective(a.op, data, aux, sig); });
  pld::tensor::barrier(sig);
  std::vector<float> want(n, -1.0f);
  for (std::uint64_t i = 0; i < n; ++i) {
    t[i] = -1;
    if (a.op == ALLREDUCE) {
      t[i] = fval(me, 0, i);
      want[i] = 0;
      for (int r = 0; r < np; ++r) want[i] += fval(r, 0, i);
    }
    if (a.op == BCAST) t[i] = me == 0 ? fval(0, 0, i) : -1, want[i] = fval(0, 0, i);
    if (a.op == ALLGATHER && i < per) s[i] = fval(me, 0, i);
    if (a.op == ALLGATHER) want[i] = fval(static_cast<int>(i / per), 0, i % per);
    if (a.op == ALLTOALL)
      s[i] = fval(me, static_cast<int>(i / per), i % per), want[i] = fval(static_cast<int>(i / per), me, i % per);
  }
  pld::tensor::barrier(sig);
  collective(a.op, data, aux, sig);
  pld::tensor::barrier(sig);
  long bad = 0;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    if (t[i] != want[i] && bad++ == 0) first = i;
  if (bad)
    std::fprintf(
        stderr,
        "pld-bench-shmem: %s %llu B at %d ranks: rank %d holds %ld wrong elements (first at %llu: %g, want %g)\n",
        kOps[a.op], static_cast<unsigned long long>(a.bytes), np, me, bad, static_cast<unsigned long long>(first),
        t[first], want[first]);
  out.data()[0] = ns;
  out.data()[1] = static_cast<double>(bad);
}

std::uint64_t parse_size(const std::string& opt, const std::string& s) {
  std::size_t end = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string suffix = end ? s.substr(end) : "?";
  const int shift = suffix.empty()                   ? 0
                    : suffix == "K" || suffix == "k" ? 10
                    : suffix == "M" || suffix == "m" ? 20
                    : suffix == "G" || suffix == "g" ? 30
                                                     : -1;
  if (shift < 0) throw CLI::ValidationError(opt, "'" + s + "': expected a size in bytes (K/M/G suffixes)");
  return static_cast<std::uint64_t>(v) << shift;
}

}  // namespace shmembench

int main(int argc, char** argv) {
  using namespace shmembench;
  CLI::App app{"pld-bench-shmem: pld's SHMEM-style primitives and collectives, the rows of bench/peers/shmem_oshmem.c"};
  std::string ops_s, min_s = "8", max_s = "1M", fac_s = "4", json;
  std::int64_t given_iters = 0;
  int nranks = 2;
  bool quick = false;
  app.add_option("--ops", ops_s,
                 "comma-separated rows (default: all): put, get, put_bw, get_bw, fetch_add, "
                 "compare_swap, put_signal, barrier_all, allreduce, broadcast, allgather, all_to_all");
  app.add_option("-b,--minbytes", min_s, "smallest size in bytes (K/M/G)")->capture_default_str();
  app.add_option("-e,--maxbytes", max_s, "largest size in bytes")->capture_default_str();
  app.add_option("-f,--stepfactor", fac_s, "multiply the size by this between rows")->capture_default_str();
  app.add_option("-n,--iters", given_iters, "timed iterations per row (0 = auto: budget / size in [20, 20000])")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quick", quick, "sizes 8 B - 4 KiB (factor 8), at most 500 iterations: seconds");
  app.add_option("-g,--ngpus", nranks, "ranks (pld::run forks them)")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("-J,--json", json, "write one JSON object per row to FILE");
  std::uint64_t minb = 0, maxb = 0, factor = 0, budget = 1ull << 30;
  std::int64_t max_iters = kMaxIters;
  bool want[NOPS] = {};
  try {
    app.parse(argc, argv);
    minb = parse_size("-b", min_s);
    maxb = parse_size("-e", max_s);
    factor = parse_size("-f", fac_s);
    if (quick) minb = 8, maxb = 4096, factor = 8, budget = 16u << 20, max_iters = 500;
    if (minb == 0) throw CLI::ValidationError("-b", "must be > 0");
    if (factor < 2) throw CLI::ValidationError("-f", "must be >= 2");
    if (minb > maxb) throw CLI::ValidationError("-b", min_s + " exceeds -e " + max_s);
    bool any = false;
    for (std::size_t b = 0; !ops_s.empty() && b <= ops_s.size();) {
      const std::size_t e = std::min(ops_s.find(',', b), ops_s.size());
      const std::string tok = ops_s.substr(b, e - b);
      int k = 0;
      while (k < NOPS && tok != kOps[k]) ++k;
      if (k == NOPS) throw CLI::ValidationError("--ops", "unknown op '" + tok + "' (see --help)");
      want[k] = any = true;
      b = e + 1;
    }
    for (int k = 0; k < NOPS && !any; ++k) want[k] = true;
    for (int k = 0; k <= PSIG && nranks < 2; ++k)
      if (want[k]) throw CLI::ValidationError("--ops", std::string(kOps[k]) + " needs 2 ranks (-g 2)");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  // The rows: the same sweep and rounding as shmem_oshmem.c.
  std::vector<Row> rows;
  for (int op = 0; op < NOPS; ++op) {
    if (!want[op]) continue;
    const bool sized = op == PUT || op == GET || op == PUT_BW || op == GET_BW || op == PSIG || op >= ALLREDUCE;
    const std::uint64_t unit = op <= PSIG ? 1 : op == ALLGATHER || op == ALLTOALL ? 4u * nranks : 4;
    std::uint64_t last = ~0ull;
    for (std::uint64_t s = minb;; s = s * factor > maxb && s < maxb ? maxb : s * factor) {
      const std::uint64_t bytes = op == FADD || op == CSWAP ? 8 : op == BARRIER ? 0 : std::max(unit, s / unit * unit);
      if (bytes != last) {
        last = bytes;
        Row r{op, bytes, 0, 0};
        const std::uint64_t per = op == PUT_BW || op == GET_BW ? kWindow * bytes : bytes;
        r.iters = given_iters > 0 ? given_iters : pldbench::rules::auto_iters(budget, per, kMinIters, max_iters);
        r.warmup = pldbench::rules::warmup_iters(-1, r.iters, 5, rows.empty());
        rows.push_back(r);
      }
      if (!sized || s >= maxb) break;
    }
  }

  std::ofstream js;
  if (!json.empty()) {
    js.open(json);
    if (!js) {
      std::fprintf(stderr, "pld-bench-shmem: cannot open the JSON file '%s'\n", json.c_str());
      return 2;
    }
  }
  const std::uint64_t bufbytes = (maxb + 4095) / 4096 * 4096 + 4096;
  auto res = pld::HostTensor<double>::zeros({static_cast<pld::Index>(rows.size()), nranks, 2});
  long wrong_total = 0;
  std::printf("# pld-bench-shmem: pld %s, %d ranks\n#  %-12s %9s %5s %7s %10s %9s %6s\n", pld::version(), nranks, "op",
              "bytes", "ranks", "iters", "us", "GB/s", "check");
  std::fflush(stdout);
  auto report = [&](std::size_t i) {  // on the host, once row i's dispatches have finished
    const Row& r = rows[i];
    double worst = 0, bad = 0;
    for (int k = 0; k < nranks; ++k) {
      worst = std::max(worst, res(static_cast<pld::Index>(i), k, 0));
      bad += res(static_cast<pld::Index>(i), k, 1);
    }
    if (r.op <= PSIG) worst = res(static_cast<pld::Index>(i), 0, 0);
    double us = worst / static_cast<double>(r.iters) / 1e3;
    if (r.op == PUT_BW || r.op == GET_BW) us /= kWindow;
    if (r.op >= FADD && r.op <= PSIG) us /= 2;  // half a round trip
    const double gbps = r.op <= GET_BW || r.op == PSIG ? static_cast<double>(r.bytes) / us / 1e3 : 0;
    char bw[32] = "-";
    if (gbps > 0) std::snprintf(bw, sizeof bw, "%.3f", gbps);
    std::printf("   %-12s %9llu %5d %7lld %10.4f %9s %6s\n", kOps[r.op], static_cast<unsigned long long>(r.bytes),
                nranks, static_cast<long long>(r.iters), us, bw, bad ? "WRONG" : "ok");
    std::fflush(stdout);
    if (bad) ++wrong_total;
    if (js) {
      nlohmann::ordered_json j = {{"suite", "shmem"}, {"side", "pld"}, {"op", kOps[r.op]}, {"bytes", r.bytes},
                                  {"ranks", nranks},  {"us", us},      {"iters", r.iters}};
      if (r.op == PUT_BW || r.op == GET_BW) j["gbps"] = gbps;
      js << j.dump() << '\n';
    }
  };
  try {
    pld::DistributedConfig config;
    config.heap_bytes = 2 * bufbytes + (1u << 20);
    for (int r = 0; r < nranks; ++r) config.device_ids.push_back(r);
    pld::run(config, [&](pld::Host& h) {
      const auto data = h.alloc_window_buffer(bufbytes, "data");
      const auto aux = h.alloc_window_buffer(bufbytes, "aux");
      const auto cells = h.window<std::int64_t>(h.alloc_window_buffer({2}, pld::DType::INT64, "cells"), {2});
      const auto sig =
          h.window<std::int32_t>(h.alloc_window_buffer({nranks, 16}, pld::DType::INT32, "sig"), {nranks, 16});
      const auto ping = h.window<std::int32_t>(h.alloc_window_buffer({16}, pld::DType::INT32, "ping"), {16});
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        const auto at = static_cast<pld::Index>(i);
        if (r.op <= PSIG) {
          const pld::Dims shape{static_cast<pld::Index>(r.bytes)};
          const auto d = h.window<std::uint8_t>(data, shape), s = h.window<std::uint8_t>(aux, shape);
          for (int k = 0; k < nranks; ++k) h.dispatch(k, p2p_kernel, d, s, cells, sig, ping, res[at][k], r);
        } else {
          const pld::Index n = std::max<pld::Index>(static_cast<pld::Index>(r.bytes / 4), 1), cols = n / nranks;
          const bool blocked = r.op == ALLGATHER || r.op == ALLTOALL;
          const auto d = h.window<float>(data, blocked ? pld::Dims{nranks, cols} : pld::Dims{n});
          const auto s = h.window<float>(aux, r.op == ALLGATHER  ? pld::Dims{cols}
                                              : r.op == ALLTOALL ? pld::Dims{nranks, cols}
                                                                 : pld::Dims{1});
          for (int k = 0; k < nranks; ++k) h.dispatch(k, coll_kernel, d, s, sig, res[at][k], r);
        }
        h.callback(report, i);
      }
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pld-bench-shmem: pld::run failed: %s\n", e.what());
    return 2;
  }
  return wrong_total ? 1 : 0;
}
