// threads: several threads per process issue put + flush + accumulate notifies and poll their
// own cells at the same time (pld's collective lanes and task-graph workers do this), under
// MPI_THREAD_MULTIPLE. Thread t of rank 0 ping-pongs with thread t of rank 1 on cell pair t.
//   mpirun -n 2 ./threads [--threads 4] [--iters 2000] [--poll load|iprobe] [--bytes 1024] [--lock 1]
// --lock 1: one mutex per process around every MPI call (what a backend does to run at
// MPI_THREAD_SERIALIZED, or to keep a component that is slow under concurrent calls usable).
#include "common.h"

#include <sched.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int got = init_mpi(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int T = atoi(arg(argc, argv, "--threads", "4").c_str());
  const int iters = atoi(arg(argc, argv, "--iters", "2000").c_str());
  const bool progress = arg(argc, argv, "--poll", "iprobe") == "iprobe";
  const size_t bytes = strtoull(arg(argc, argv, "--bytes", "1024").c_str(), nullptr, 10);
  const bool use_lock = atoi(arg(argc, argv, "--lock", "0").c_str()) != 0;
  std::mutex mpi_mutex;
  auto guard = [&] { return use_lock ? std::unique_lock<std::mutex>(mpi_mutex) : std::unique_lock<std::mutex>(); };
  const MPI_Aint slot = 64 + static_cast<MPI_Aint>((bytes + 63) / 64 * 64);
  char* base;
  MPI_Win win;
  MPI_Win_allocate(slot * T, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, static_cast<size_t>(slot * T));
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string desc;
  describe_window(win, rank, size, &desc);
  std::atomic<long> bad{0};
  const double t0 = now_s();
  auto body = [&](int t) {
    if (rank > 1) return;
    const int peer = 1 - rank;
    int32_t* cell = reinterpret_cast<int32_t*>(base + slot * t);
    unsigned char* data = reinterpret_cast<unsigned char*>(base + slot * t + 64);
    std::vector<unsigned char> src(bytes);
    auto notify = [&](int i) {
      for (size_t b = 0; b < bytes; ++b) src[b] = static_cast<unsigned char>(i * 7 + t + b);
      auto g = guard();
      MPI_Put(src.data(), static_cast<int>(bytes), MPI_BYTE, peer, slot * t + 64, static_cast<int>(bytes), MPI_BYTE, win);
      MPI_Win_flush(peer, win);
      const int one = 1;
      MPI_Accumulate(&one, 1, MPI_INT, peer, slot * t, 1, MPI_INT, MPI_SUM, win);
      MPI_Win_flush(peer, win);
    };
    auto wait = [&](int i) {
      long spins = 0;
      while (__atomic_load_n(cell, __ATOMIC_ACQUIRE) < i) {
        if (progress) { auto g = guard(); int f; MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE); }
        if ((++spins & 15) == 0) sched_yield();
      }
      { auto g = guard(); MPI_Win_sync(win); }
      for (size_t b = 0; b < bytes; ++b)
        if (data[b] != static_cast<unsigned char>(i * 7 + t + b)) { ++bad; break; }
    };
    for (int i = 1; i <= iters; ++i) {
      if (rank == 0) { notify(i); wait(i); } else { wait(i); notify(i); }
    }
  };
  std::vector<std::thread> th;
  for (int t = 0; t < T; ++t) th.emplace_back(body, t);
  for (auto& x : th) x.join();
  const double dt = now_s() - t0;
  long b = bad, allbad = 0;
  MPI_Reduce(&b, &allbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("n=%d thread-level=%d threads=%d lock=%d poll=%s: DONE %d exchanges per thread in %.2f s, wrong payloads %ld  %s\n", size, got,
           T, use_lock, progress ? "iprobe" : "load", iters, dt, allbad, desc.c_str());
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}
