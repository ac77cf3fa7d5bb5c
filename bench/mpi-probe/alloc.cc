// alloc: cost of one big MPI_Win_allocate (pld's heap window): time of the collective call,
// of lock_all, and what it uses in /dev/shm before and after touching a part of it.
//   mpirun -n 4 ./alloc [--mib 256] [--touch-mib 16]
#include "common.h"

#include <sys/statvfs.h>

static double shm_used_mib() {
  struct statvfs s;
  statvfs("/dev/shm", &s);
  return static_cast<double>(s.f_blocks - s.f_bfree) * s.f_frsize / 1048576.0;
}

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const MPI_Aint mib = atoi(arg(argc, argv, "--mib", "256").c_str());
  const size_t touch = strtoull(arg(argc, argv, "--touch-mib", "16").c_str(), nullptr, 10) << 20;
  const double before = shm_used_mib();
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  char* base;
  MPI_Win win;
  MPI_Win_allocate(mib << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  const double t_alloc = now_s() - t0;
  t0 = now_s();
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  const double t_lock = now_s() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double after_alloc = shm_used_mib();
  memset(base, 0, touch);
  MPI_Barrier(MPI_COMM_WORLD);
  const double after_touch = shm_used_mib();
  std::string desc;
  describe_window(win, rank, size, &desc);
  if (rank == 0)
    printf("P=%d window %ld MiB/rank: MPI_Win_allocate %.1f ms, lock_all %.3f ms; /dev/shm used %.0f -> %.0f MiB after "
           "allocate -> %.0f MiB after each rank touched %zu MiB  %s\n",
           size, static_cast<long>(mib), t_alloc * 1e3, t_lock * 1e3, before, after_alloc, after_touch, touch >> 20,
           desc.c_str());
  t0 = now_s();
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  if (rank == 0) printf("  unlock_all + MPI_Win_free %.1f ms\n", (now_s() - t0) * 1e3);
  MPI_Finalize();
}
