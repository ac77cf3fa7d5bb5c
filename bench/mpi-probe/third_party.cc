// third_party: the contract covers writes to a THIRD rank. Rank 0 puts a block into rank 2's
// window, completes it (--data-flush remote: MPI_Win_flush(2); local: only MPI_Win_flush_local(2),
// i.e. what a notify that flushes only its own target would leave), then notifies rank 1
// (accumulate + flush(1)). Rank 1 waits for the notify (polling with MPI_Iprobe), then MPI_Gets
// the block from rank 2 and checks it; then acknowledges to rank 0. Rank 2 polls MPI meanwhile.
//   mpirun -n 3 ./third_party [--iters 500] [--bytes 65536] [--data-flush remote|local]
#include "common.h"

#include <vector>

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 3) { if (rank == 0) printf("needs 3 ranks\n"); MPI_Finalize(); return 0; }
  const int iters = atoi(arg(argc, argv, "--iters", "500").c_str());
  const size_t bytes = strtoull(arg(argc, argv, "--bytes", "65536").c_str(), nullptr, 10);
  const bool remote = arg(argc, argv, "--data-flush", "remote") == "remote";
  char* base;
  MPI_Win win;
  MPI_Win_allocate(static_cast<MPI_Aint>(64 + bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, 64 + bytes);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  auto* cell = reinterpret_cast<int32_t*>(base);  // rank 1: notifies from 0; rank 0: acks from 1
  auto wait_ge = [&](int32_t v) {
    while (__atomic_load_n(cell, __ATOMIC_ACQUIRE) < v) { int f; MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE); }
    MPI_Win_sync(win);
  };
  auto bump = [&](int t) { const int one = 1; MPI_Accumulate(&one, 1, MPI_INT, t, 0, 1, MPI_INT, MPI_SUM, win); MPI_Win_flush(t, win); };
  std::vector<unsigned char> src(bytes), got(bytes);
  long stale = 0;
  for (int i = 1; i <= iters; ++i) {
    if (rank == 0) {
      for (size_t b = 0; b < bytes; ++b) src[b] = static_cast<unsigned char>(i * 13 + b);
      MPI_Put(src.data(), static_cast<int>(bytes), MPI_BYTE, 2, 64, static_cast<int>(bytes), MPI_BYTE, win);
      if (remote) MPI_Win_flush(2, win); else MPI_Win_flush_local(2, win);
      bump(1);
      wait_ge(i);  // ack
    } else if (rank == 1) {
      wait_ge(i);
      MPI_Get(got.data(), static_cast<int>(bytes), MPI_BYTE, 2, 64, static_cast<int>(bytes), MPI_BYTE, win);
      MPI_Win_flush(2, win);
      for (size_t b = 0; b < bytes; ++b)
        if (got[b] != static_cast<unsigned char>(i * 13 + b)) { ++stale; break; }
      bump(0);
    }
  }
  MPI_Win_flush_all(win);
  long all = 0;
  MPI_Reduce(&stale, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);  // rank 2 sits in here: progress
  std::string desc;
  describe_window(win, rank, size, &desc);
  if (rank == 0)
    printf("P=%d data-flush=%s: rank 1 read a stale block from rank 2 in %ld of %d rounds (%zu bytes)  %s\n", size,
           remote ? "remote" : "local", all, iters, bytes, desc.c_str());
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}
