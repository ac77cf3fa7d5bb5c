// Shared helpers of the mpi-probe programs (bench/mpi-probe/README.md).
#pragma once
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>

inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// "--key value" or "--key=value" lookup with a default.
inline std::string arg(int argc, char** argv, const char* key, const char* dflt) {
  const size_t n = strlen(key);
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], key, n) != 0) continue;
    if (argv[i][n] == '=') return argv[i] + n + 1;
    if (argv[i][n] == 0 && i + 1 < argc) return argv[i + 1];
  }
  return dflt;
}

// --osc-env LIST: setenv("OMPI_MCA_osc", LIST) before MPI_Init, i.e. what a library can do from
// inside the program to override Debian's /etc/openmpi/openmpi-mca-params.conf ("osc = ^ucx,pt2pt").
inline int init_mpi(int argc, char** argv) {
  const std::string osc = arg(argc, argv, "--osc-env", "");
  if (!osc.empty()) setenv("OMPI_MCA_osc", osc.c_str(), 1);
  // --mca-env name=value: setenv("OMPI_MCA_<name>", value) before MPI_Init (any MCA variable).
  const std::string mca = arg(argc, argv, "--mca-env", "");
  if (const size_t eq = mca.find('='); eq != std::string::npos)
    setenv(("OMPI_MCA_" + mca.substr(0, eq)).c_str(), mca.substr(eq + 1).c_str(), 1);
  const std::string t = arg(argc, argv, "--thread", "multiple");
  const int want = t == "single" ? MPI_THREAD_SINGLE : t == "serialized" ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
  int got = 0;
  MPI_Init_thread(&argc, &argv, want, &got);
  return got;
}

// Open MPI's osc components name the window after themselves ("rdma window 3", "sm window 3",
// ...): MPI_Win_get_name tells which component was selected. Also prints MPI_WIN_MODEL and
// whether MPI_Win_shared_query answers for a peer.
inline void describe_window(MPI_Win win, int rank, int size, std::string* out) {
  int* model = nullptr;
  int flag = 0;
  MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
  MPI_Aint qsize = 0;
  int disp = 0;
  void* base = nullptr;
  MPI_Errhandler old;
  MPI_Win_get_errhandler(win, &old);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int rc = MPI_Win_shared_query(win, (rank + 1) % size, &qsize, &disp, &base);
  MPI_Win_set_errhandler(win, old);
  char name[MPI_MAX_OBJECT_NAME] = {0};
  int len = 0;
  MPI_Win_get_name(win, name, &len);
  char buf[512];
  snprintf(buf, sizeof buf, "osc='%s' model=%s shared_query(peer)=%s", name, flag ? (*model == MPI_WIN_UNIFIED ? "unified" : "separate") : "?",
           rc == MPI_SUCCESS && base ? "yes" : "no");
  *out = buf;
}
