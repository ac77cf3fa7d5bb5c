// progress_probe: the start-up check the mpi backend would run once after MPI_Win_lock_all —
// does a notify (MPI_Accumulate) reach a target that makes no MPI call?
//
//  1. Wire-up: every rank accumulates 0 into every peer and flushes, while every rank is inside
//     MPI (UCX creates endpoints lazily; the wire-up needs the target's progress once).
//  2. Two (three for odd P) phases; in each, the "senders" wait --delay ms after a barrier (so
//     that the targets are already polling), then MPI_Accumulate(+1) into their right
//     neighbour + MPI_Win_flush_local (no remote completion: nothing blocks on the target); the
//     targets watch their cell for up to --ms WITHOUT calling MPI. Then everybody completes
//     (MPI_Win_flush_all, MPI_Barrier drive progress).
//  3. MPI_Allreduce(MIN): passive progress only if every observed pair saw it.
// A rank only ever waits on memory for a bounded time, so the check cannot hang.
//   mpirun -n 3 ./progress_probe [--ms 100] [--delay 5] [--wireup 1] [--flush remote|local]
#include "common.h"

#include <unistd.h>

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double limit = atof(arg(argc, argv, "--ms", "100").c_str()) / 1e3;
  const int delay_us = static_cast<int>(atof(arg(argc, argv, "--delay", "5").c_str()) * 1e3);
  const bool wireup = atoi(arg(argc, argv, "--wireup", "1").c_str()) != 0;
  const bool flush_local = arg(argc, argv, "--flush", "remote") == "local";
  char* base;
  MPI_Win win;
  MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, 64);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_start = now_s();
  const int zero = 0, one = 1;
  if (wireup) {
    for (int k = 1; k < size; ++k) MPI_Accumulate(&zero, 1, MPI_INT, (rank + k) % size, 8, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const int phases = size % 2 ? 3 : 2;
  int passive = 1;
  double worst = 0;
  const int32_t* cell = reinterpret_cast<int32_t*>(base);
  for (int ph = 0; ph < phases && (size > 1); ++ph) {
    // phase 0: even ranks send; phase 1: odd ranks send; phase 2 (odd P): rank P-1 sends to 0
    auto sends = [&](int r) { return ph < 2 ? (r % 2 == ph && !(size % 2 && r == size - 1)) : r == size - 1; };
    const bool i_send = sends(rank), i_watch = sends(left);
    // Before the barrier: after it the left neighbour may already have written (a watcher that
    // reads its cell late would otherwise wait for one increment too many).
    const int32_t want = __atomic_load_n(cell, __ATOMIC_ACQUIRE) + 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (i_send) {
      usleep(delay_us);
      MPI_Accumulate(&one, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win);
      if (flush_local) MPI_Win_flush_local(right, win);
      else MPI_Win_flush(right, win);
    }
    if (i_watch) {
      const double t0 = now_s();
      bool got = false;
      double seen = 0;  // after the sender's delay; may be < 0 when the watcher started late
      while (!got && now_s() - t0 < limit + delay_us * 1e-6)
        if (__atomic_load_n(cell, __ATOMIC_ACQUIRE) >= want) { got = true; seen = now_s() - t0 - delay_us * 1e-6; }
      if (!got) { passive = 0; if (getenv("PROBE_DEBUG")) fprintf(stderr, "rank %d phase %d: not seen (cell %d, wanted %d, watched %.1f ms)\n", rank, ph, *cell, want, (now_s() - t0) * 1e3); }
      else if (seen > worst) worst = seen;
    }
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  int all = 0;
  MPI_Allreduce(&passive, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  double w = 0;
  MPI_Reduce(&worst, &w, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  std::string desc;
  describe_window(win, rank, size, &desc);
  if (rank == 0)
    printf("P=%d wireup=%d flush=%s passive-target progress: %s (check took %.1f ms)  %s\n", size, wireup, flush_local ? "local" : "remote",
           all ? ("YES, slowest pair " + std::to_string(static_cast<int>(w * 1e6)) + " us after the send").c_str()
               : "NO -> waits must drive MPI progress",
           (now_s() - t_start) * 1e3, desc.c_str());
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}
