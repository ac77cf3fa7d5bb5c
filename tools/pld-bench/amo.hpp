// pld-bench --op amo: pld's atomics, next to their bare baseline.
//   latency     ranks 0 and 1 take turns on one int64 cell of rank 1: each polls it until it
//               holds its turn, then adds 1, pausing between polls. Half a round trip per turn,
//               the median over batches of turns that alternate between pld's calls
//               (atomic_fetch, atomic_fetch_add) and the bare baseline: an acquire load and
//               `lock xadd` on the same cell as the rank addresses it. Same processes, same cell,
//               same loop, at the same time: the two differ by pld's calls alone. The baseline
//               needs rank 1's window addressable (shm; not over TCP under mpirun).
//   throughput  every rank atomic_fetch_add(1)s one int64 cell of rank 0 at once; aggregate
//               operations per second = P * iters / the slowest rank's loop time.
// Both are checked: the cells must end at the exact totals (#wrong counts the difference).
// print_put_signal_ratios adds the put_signal table's ratios to put (rma_kernels.cpp's loops).
#pragma once

#include "options.hpp"
#include "runner.hpp"

#include <cstdint>
#include <cstdio>

namespace pldbench {

struct AmoResults {
  int nranks = 0;
  std::int64_t warmup = 0, iters = 0;
  double latency_us = -1;       // half a round trip of pld's ping-pong (-1: fewer than 2 ranks)
  double bare_latency_us = -1;  // the bare lock xadd turns (-1: not measured)
  double mops = 0;              // aggregate million atomic_fetch_adds per second, every rank on one cell
  double ns_per_op = 0;         // the slowest rank's loop time per own operation
  std::int64_t wrong = 0;
};

/// Runs the amo benchmark in one pld::run of o.nranks ranks (-n iterations, default 100,000).
AmoResults run_amo(const Options& o);
void print_amo(std::FILE* out, const AmoResults& r);

/// The put_signal table's loops in nanoseconds per call and as ratios to put, row by row:
/// put_signal / put, floor / put (a put and a bare release store on the peer's cell),
/// put_signal / floor and put_signal / (put + notify).
void print_put_signal_ratios(std::FILE* out, const TableResult& t);

}  // namespace pldbench
