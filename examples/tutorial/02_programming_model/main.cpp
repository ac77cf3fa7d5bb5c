// Step 02 — the programming model: three levels, one process each.
//
// Same skeleton as step 01; the point here is the labels. Every rank computes y[r] = x[r] * (r + 1),
// then a second dispatch to the same rank computes z[r] = y[r] + x[r].
//
// Concepts introduced:
//   - level 1, the host orchestrator (PyPTO @pl.jit.host): runs in the host process, owns the
//     control plane, loops over ranks and dispatches
//   - level 2, the per-rank wrapper (PyPTO @pl.jit): the function the host dispatches; runs in
//     the rank process, calls kernels in order, never names a device
//   - level 3, the kernel (PyPTO @pl.jit.incore): tile math on this rank's data only
//   - what crosses a dispatch: HostTensor views, window views and plain values (no pointers,
//     no capturing lambdas: the rank processes exist before the dispatch is built)
//   - per rank, dispatches run in program order; across ranks nothing is ordered (that is what
//     signals are for, from step 03 on)
//
// Run:  ./02_programming_model -d 0,1      (any number of ranks)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>

constexpr pld::Index ROWS = 8;
constexpr pld::Index COLS = 8;

// A [ROWS, COLS] tile with every element equal to `v` (tile math is tile-with-tile).
pld::Tile<float> filled(float v) {
  pld::Tile<float> t({ROWS, COLS});
  std::fill_n(t.data(), t.numel(), v);
  return t;
}

// =============================================================================================
// STEP 1 — level 3, the kernels. They see only the rank's own slices and the values the wrapper
// forwarded; they do the math.
// =============================================================================================
void scale_by_rank(pld::Tensor<float> x, pld::Tensor<float> y, int rank) {
  pld::Tile<float> t = pld::tile::load(x, {0, 0}, {ROWS, COLS});
  pld::Tile<float> scaled = pld::tile::mul(t, filled(static_cast<float>(rank)));  // x * rank
  pld::tile::store(pld::tile::add(scaled, t), {0, 0}, y);                         // x * rank + x
}

void add_tensors(pld::Tensor<float> a, pld::Tensor<float> b, pld::Tensor<float> out) {
  pld::tile::store(pld::tile::add(pld::tile::load(a, {0, 0}, {ROWS, COLS}), pld::tile::load(b, {0, 0}, {ROWS, COLS})),
                   {0, 0}, out);
}

// =============================================================================================
// STEP 2 — level 2, the per-rank wrappers: what the host dispatches. They run in the rank's
// process (see `pid`), may call several kernels in sequence and hold per-rank staging; here they
// are thin. In pld parameters may come in any order (no tensors-first rule as in PyPTO).
// =============================================================================================
void device_orch(pld::Tensor<float> x, pld::Tensor<float> y, pld::Tensor<int32_t> pid, int rank) {
  pld::tile::write(pid, {0}, static_cast<int32_t>(getpid()));  // which process runs level 2/3
  scale_by_rank(x, y, rank);
}

void device_finish(pld::Tensor<float> x, pld::Tensor<float> y, pld::Tensor<float> z) {
  add_tensors(y, x, z);  // y was written by this rank's previous dispatch: program order
}

// =============================================================================================
// STEP 3 — level 1, the host orchestrator: control plane only. The loop index r is the rank
// (PyPTO's device=r); it flows down as an ordinary argument. Two dispatches per rank run in the
// order they were issued on that rank.
// =============================================================================================
void host_orch(pld::Host& h, pld::HostTensor<float>& x, pld::HostTensor<float>& y, pld::HostTensor<float>& z,
               pld::HostTensor<int32_t>& pid) {
  for (int r = 0; r < h.world_size(); ++r) {
    h.dispatch(r, device_orch, x[r], y[r], pid[r], r);
    h.dispatch(r, device_finish, x[r], y[r], z[r]);
  }
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config =
      tutorial::parse_devices(argc, argv, "02_programming_model",
                              "Step 02: host orchestrator -> per-rank wrapper -> kernel; y[r] = x[r] * (r+1)");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    // =========================================================================================
    // STEP 4: run. The host process builds the dispatches; P forked rank processes execute them.
    // =========================================================================================
    auto x = pld::HostTensor<float>::random({P, ROWS, COLS}, /*seed=*/2);
    auto y = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    auto z = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    auto pid = pld::HostTensor<int32_t>::zeros({P, 1});
    pld::run(config, host_orch, x, y, z, pid);

    const int host_pid = static_cast<int>(getpid());
    if (pld::is_output_rank()) {
      std::printf("level 1 (host orchestrator) ran in process %d\n", host_pid);
      for (int r = 0; r < P; ++r) std::printf("levels 2+3 of rank %d ran in process %d\n", r, pid(r, 0));
    }

    // =========================================================================================
    // STEP 5: the golden: y[r] = x[r] * (r + 1), z[r] = y[r] + x[r]; one process per rank.
    // =========================================================================================
    auto y_want = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    auto z_want = pld::HostTensor<float>::zeros({P, ROWS, COLS});
    for (int r = 0; r < P; ++r)
      for (pld::Index i = 0; i < ROWS; ++i)
        for (pld::Index j = 0; j < COLS; ++j) {
          y_want(r, i, j) = x(r, i, j) * static_cast<float>(r) + x(r, i, j);
          z_want(r, i, j) = y_want(r, i, j) + x(r, i, j);
        }
    tutorial::Checker check;
    check.expect("y", y, y_want);
    check.expect("z", z, z_want);
    std::set<int> pids(pid.begin(), pid.end());
    check.expect("number of distinct rank processes", static_cast<int>(pids.size()), P);
    // On shm the host forks one process per rank. Under mpirun (the mpi backend) there is no
    // separate host: every MPI process runs level 1 itself and levels 2+3 of its own rank.
    const bool spmd = pld::launcher_world_size() > 0;
    check.expect("rank processes include this process", pids.count(host_pid) > 0, spmd);
    return check.report();
  });
}
