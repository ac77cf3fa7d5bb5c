// pingpong: MPI_Send/MPI_Recv 8-byte ping-pong between ranks 0 and 1 — the two-sided baseline
// for the notify->wait latency of notify_wait (same transport, same machine load).
//   mpirun -n 2 ./pingpong [--iters 1000]
#include "common.h"

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int iters = atoi(arg(argc, argv, "--iters", "1000").c_str());
  char buf[8] = {0};
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1) t0 = now_s();
    if (rank == 0) {
      MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) printf("send/recv one-way latency %.2f us (%d round trips)\n", (now_s() - t0) / iters / 2 * 1e6, iters);
  MPI_Finalize();
}
