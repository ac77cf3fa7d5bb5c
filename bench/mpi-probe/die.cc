// die: what mpirun does when one rank dies (SIGKILL / exit(3) / MPI_Abort) while the others
// poll window memory without calling MPI (a pld wait). Rank 1 dies after 1 s; rank 0 polls
// for up to 30 s and says how it ended. The shell reports mpirun's exit code and the time.
//   mpirun -n 2 ./die --how kill|exit|abort [--progress 0|1]
#include "common.h"

#include <signal.h>
#include <unistd.h>

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string how = arg(argc, argv, "--how", "kill");
  const bool progress = atoi(arg(argc, argv, "--progress", "0").c_str()) != 0;
  char* base;
  MPI_Win win;
  MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, 64);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_s();
  if (rank == 1) {
    sleep(1);
    fprintf(stderr, "rank 1: dying by %s\n", how.c_str());
    if (how == "kill") raise(SIGKILL);
    if (how == "exit") _exit(3);
    MPI_Abort(MPI_COMM_WORLD, 7);
  }
  volatile int32_t* cell = reinterpret_cast<int32_t*>(base);
  while (*cell == 0 && now_s() - t0 < 30) {
    if (progress) { int f; MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE); }
    usleep(100);
  }
  fprintf(stderr, "rank %d: still alive after %.1f s (nobody killed it)\n", rank, now_s() - t0);
  MPI_Finalize();
}
