// notify_wait: does a put + flush + accumulate/fetch_and_op + flush "notify" reach a target that
// only polls its own window memory? Ping-pong between world ranks 0 and 1 (other ranks idle in a
// final barrier); reports visibility, the data check after the notify (release/acquire), and the
// one-way notify->wait latency.
//
//   mpirun -n 2 ./notify_wait --poll load|winsync|iprobe|flushlocal|test --notify acc|fop
//          [--iters 2000] [--bytes 8] [--sync 1] [--timeout 3] [--thread multiple|single]
//
// --poll: what the waiter does between two reads of its cell
//   load       nothing but an atomic load (no MPI call at all)
//   winsync    MPI_Win_sync(win) + atomic load
//   iprobe     MPI_Iprobe(ANY_SOURCE, ANY_TAG, world)
//   flushlocal MPI_Win_flush_local(peer, win)
//   test       MPI_Test on a dummy MPI_Irecv that never matches
// --warmup K: the first K exchanges poll with MPI_Iprobe whatever --poll says (connections set up
//   lazily, e.g. UCX endpoint wire-up, need the target's progress once); timing starts after them.
// --sync 1: MPI_Win_sync after the cell is seen, before the data is read (0: no sync).
// If the cell is not seen within --timeout seconds the program says HANG and switches to
// iprobe polling for the rest of the run, to tell "needs progress" from "lost".
#include "common.h"

#include <sched.h>

#include <atomic>
#include <vector>

int main(int argc, char** argv) {
  const int thread = init_mpi(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string poll = arg(argc, argv, "--poll", "load");
  const std::string how = arg(argc, argv, "--notify", "acc");
  const int iters = atoi(arg(argc, argv, "--iters", "2000").c_str());
  const size_t bytes = strtoull(arg(argc, argv, "--bytes", "8").c_str(), nullptr, 10);
  const int sync_after = atoi(arg(argc, argv, "--sync", "1").c_str());
  const double timeout = atof(arg(argc, argv, "--timeout", "3").c_str());
  const int warmup = atoi(arg(argc, argv, "--warmup", "0").c_str());
  const bool yield = size > 2 || atoi(arg(argc, argv, "--yield", "1").c_str());

  // Layout: [0,64) signal cell; [64, 64+bytes) data.
  const MPI_Aint win_bytes = 64 + static_cast<MPI_Aint>(bytes);
  char* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, win_bytes);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string desc;
  describe_window(win, rank, size, &desc);

  auto* cell = reinterpret_cast<int32_t*>(base);
  unsigned char* data = reinterpret_cast<unsigned char*>(base + 64);
  std::vector<unsigned char> src(bytes);
  MPI_Request dummy;
  int dummy_buf = 0;
  MPI_Irecv(&dummy_buf, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &dummy);

  const int peer = rank == 0 ? 1 : 0;
  bool hung = false;
  long bad = 0, bad_after_sync = 0;
  double hang_seen_after = 0;
  int hang_iter = 0;  // first exchange whose wait needed the rescue (0: none)

  auto notify = [&](int target, int iter) {
    for (size_t b = 0; b < bytes; ++b) src[b] = static_cast<unsigned char>(iter + b);
    if (bytes) {
      MPI_Put(src.data(), static_cast<int>(bytes), MPI_BYTE, target, 64, static_cast<int>(bytes), MPI_BYTE, win);
      MPI_Win_flush(target, win);  // data complete at the target before the signal
    }
    const int one = 1;
    if (how == "fop") {
      int old = 0;
      MPI_Fetch_and_op(&one, &old, MPI_INT, target, 0, MPI_SUM, win);
    } else {
      MPI_Accumulate(&one, 1, MPI_INT, target, 0, 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_flush(target, win);
  };
  auto poll_once = [&](const std::string& mode) {
    if (mode == "winsync") MPI_Win_sync(win);
    else if (mode == "iprobe") { int f; MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE); }
    else if (mode == "flushlocal") MPI_Win_flush_local(peer, win);
    else if (mode == "test") { int f; MPI_Test(&dummy, &f, MPI_STATUS_IGNORE); }
  };
  auto wait = [&](int expected, int iter) {
    const double t0 = now_s();
    std::string mode = hung || iter <= warmup ? std::string("iprobe") : poll;  // after a hang: rescue mode for good
    long spins = 0;
    while (__atomic_load_n(cell, __ATOMIC_ACQUIRE) < expected) {
      poll_once(mode);
      if (yield && (++spins & 15) == 0) sched_yield();
      if (mode == poll && iter > warmup && (spins & 1023) == 0 && now_s() - t0 > timeout) {
        hung = true;
        hang_iter = iter;
        mode = "iprobe";  // rescue: drive progress
      }
    }
    if (hung && mode != poll && hang_seen_after == 0) hang_seen_after = now_s() - t0;
    // Check the payload: without sync first, then after MPI_Win_sync.
    for (size_t b = 0; b < bytes; ++b)
      if (__atomic_load_n(&data[b], __ATOMIC_RELAXED) != static_cast<unsigned char>(iter + b)) { ++bad; break; }
    if (sync_after) MPI_Win_sync(win);
    for (size_t b = 0; b < bytes; ++b)
      if (data[b] != static_cast<unsigned char>(iter + b)) { ++bad_after_sync; break; }
  };

  double t_start = 0, t_end = 0;
  if (rank < 2) {
    // One warm-up exchange with rescue, then the timed ping-pong.
    for (int i = 1; i <= iters; ++i) {
      if (i == warmup + 2) t_start = now_s();
      if (rank == 0) {
        notify(peer, i);
        wait(i, i);
      } else {
        wait(i, i);
        notify(peer, i);
      }
    }
    t_end = now_s();
  }
  int hung_any = hung, hung_all = 0;
  MPI_Cancel(&dummy);
  MPI_Wait(&dummy, MPI_STATUS_IGNORE);
  MPI_Allreduce(&hung_any, &hung_all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // who hung first, at which exchange, and how long the rescue took there
  struct { int iter, rank; } mine{hang_iter ? hang_iter : 1 << 30, rank}, first;
  MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
  double rescue = hang_iter == first.iter && rank == first.rank ? hang_seen_after : 0, rescue_max = 0;
  MPI_Allreduce(&rescue, &rescue_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  long bads[2] = {bad, bad_after_sync}, badsum[2];
  MPI_Reduce(bads, badsum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (hung_all)
      printf("n=%d thread=%d poll=%-10s notify=%s bytes=%zu: HANG (rank %d did not see exchange %d within %.1fs "
             "without progress; seen %.3fs after the wait began, once it polled with MPI_Iprobe) %s\n",
             size, thread, poll.c_str(), how.c_str(), bytes, first.rank, first.iter, timeout, rescue_max, desc.c_str());
    else
      printf("n=%d thread=%d poll=%-10s notify=%s bytes=%zu: OK  one-way notify->wait %.2f us  stale-before-sync %ld "
             "stale-after-sync %ld / %d  %s\n",
             size, thread, poll.c_str(), how.c_str(), bytes, (t_end - t_start) / (iters - warmup - 1) / 2 * 1e6, badsum[0],
             badsum[1], iters, desc.c_str());
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}
