// nbi_floor — what Open MPI itself takes to move the bytes of `pld-bench --op nbi` between two
// ranks: rank 0 sends CHUNKS messages of BYTES each (all MPI_Isend, then MPI_Waitall; and the same
// with blocking MPI_Send), rank 1 has every receive posted and answers with a one-byte message when
// all have arrived. The time per iteration, the answer included, is the floor under pld's
// `put_nbi` + `quiet` loop over the same transport (docs/design/mpi-transport.md §4.10, messages).
//
//   mpicxx -O2 -std=c++20 bench/mpi/nbi_floor.cpp -o nbi_floor
//   NODES=2 SLOTS=1 tests/mpi/netns_run.sh "$PWD/nbi_floor" [CHUNKS [BYTES [ITERS]]]   # TCP only
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double one_iteration_us(int me, bool nonblocking, int chunks, int bytes, std::vector<char>& buf,
                        std::vector<MPI_Request>& req) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  char ack = 0;
  if (me == 0) {
    for (int c = 0; c < chunks; ++c) {
      char* at = buf.data() + static_cast<std::size_t>(c) * bytes;
      if (nonblocking)
        MPI_Isend(at, bytes, MPI_BYTE, 1, c, MPI_COMM_WORLD, &req[c]);
      else
        MPI_Send(at, bytes, MPI_BYTE, 1, c, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Waitall(chunks, req.data(), MPI_STATUSES_IGNORE);
    MPI_Recv(&ack, 1, MPI_BYTE, 1, chunks, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (me == 1) {
    for (int c = 0; c < chunks; ++c)
      MPI_Irecv(buf.data() + static_cast<std::size_t>(c) * bytes, bytes, MPI_BYTE, 0, c, MPI_COMM_WORLD, &req[c]);
    MPI_Waitall(chunks, req.data(), MPI_STATUSES_IGNORE);
    MPI_Send(&ack, 1, MPI_BYTE, 0, chunks, MPI_COMM_WORLD);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int chunks = argc > 1 ? std::atoi(argv[1]) : 64;
  const int bytes = argc > 2 ? std::atoi(argv[2]) : 16384;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 30;
  if (n < 2 || chunks < 1 || bytes < 1 || iters < 1) {
    if (me == 0) std::fprintf(stderr, "nbi_floor: needs 2 ranks and positive CHUNKS, BYTES, ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::vector<char> buf(static_cast<std::size_t>(chunks) * bytes, 1);
  std::vector<MPI_Request> req(static_cast<std::size_t>(chunks));
  for (const bool nonblocking : {true, false}) {
    std::vector<double> us;
    for (int it = 0; it < iters + 3; ++it) {  // 3 warm-up iterations
      const double t = one_iteration_us(me, nonblocking, chunks, bytes, buf, req);
      if (it >= 3) us.push_back(t);
    }
    std::sort(us.begin(), us.end());
    if (me == 0)
      std::printf("%-26s %d x %d B: median %.1f us, fastest %.1f us\n",
                  nonblocking ? "MPI_Isend x N + Waitall" : "MPI_Send x N", chunks, bytes, us[us.size() / 2], us[0]);
  }
  MPI_Finalize();
}
