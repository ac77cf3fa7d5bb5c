// shared: can a process load/store a peer's window directly? MPI_Win_allocate gives no peer
// address (MPI_Win_shared_query fails, see describe_window); MPI_Win_allocate_shared on the
// node communicator does, and RMA (put/accumulate) still works on that window.
//   mpirun -n 3 ./shared
#include "common.h"

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int rank, size, nsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_size(node, &nsize);
  char* base;
  MPI_Win win;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Win_allocate_shared(4096, 1, info, node, &base, &win);
  memset(base, 0, 4096);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  MPI_Barrier(node);
  std::string desc;
  describe_window(win, rank, nsize, &desc);
  // direct store into the right neighbour's window, then an accumulate notify through MPI
  const int right = (rank + 1) % nsize;
  MPI_Aint qs;
  int du;
  char* peer;
  MPI_Win_shared_query(win, right, &qs, &du, &peer);
  *reinterpret_cast<int32_t*>(peer + 64) = 1000 + rank;
  MPI_Win_sync(win);
  const int one = 1;
  MPI_Accumulate(&one, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win);
  MPI_Win_flush(right, win);
  while (__atomic_load_n(reinterpret_cast<int32_t*>(base), __ATOMIC_ACQUIRE) < 1) {
    int f;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE);
  }
  MPI_Win_sync(win);
  const int left = (rank + nsize - 1) % nsize;
  const int got = *reinterpret_cast<int32_t*>(base + 64);
  printf("rank %d (node comm size %d): %s; direct store from left neighbour seen: %s\n", rank, nsize, desc.c_str(),
         got == 1000 + left ? "yes" : "NO");
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}
