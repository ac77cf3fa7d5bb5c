"""Step 02 — the programming model: three levels, one process each.

Same skeleton as step 01; the point here is the labels. Every rank computes y[r] = x[r] * (r + 1),
then a second dispatch to the same rank computes z[r] = y[r] + x[r].

Concepts introduced:
  - level 1, the host orchestrator (PyPTO @pl.jit.host): runs in the host process, owns the
    control plane, loops over ranks and dispatches
  - level 2, the per-rank wrapper (PyPTO @pl.jit): the function the host dispatches; runs in
    the rank process, calls kernels in order, never names a device
  - level 3, the kernel (PyPTO @pl.jit.incore): tile math on this rank's data only
  - what crosses a dispatch: host array slices, window views and plain values (no closures:
    the rank processes exist before the dispatch is built, so a dispatched function is a
    module-level function)
  - per rank, dispatches run in program order; across ranks nothing is ordered (that is what
    signals are for, from step 03 on)

Run:  python3 02_programming_model.py -d 0,1      (any number of ranks)
"""

import os
import sys

import numpy as np

import pld
import tutorial

ROWS = 8
COLS = 8


# =============================================================================================
# STEP 1 — level 3, the kernels. They see only the rank's own slices and the values the wrapper
# forwarded; they do the math.
# =============================================================================================
def scale_by_rank(x, y, rank):
    t = pld.tile.load(x, (0, 0), (ROWS, COLS))
    pld.tile.store(t * np.float32(rank) + t, (0, 0), y)  # x * rank + x


def add_tensors(a, b, out):
    pld.tile.store(pld.tile.load(a, (0, 0), (ROWS, COLS)) + pld.tile.load(b, (0, 0), (ROWS, COLS)), (0, 0), out)


# =============================================================================================
# STEP 2 — level 2, the per-rank wrappers: what the host dispatches. They run in the rank's
# process (see `pid`), may call several kernels in sequence and hold per-rank staging; here they
# are thin. Parameters may come in any order (no tensors-first rule as in PyPTO).
# =============================================================================================
def device_orch(x, y, pid, rank):
    pld.tile.write(pid, (0,), os.getpid())  # which process runs level 2/3
    scale_by_rank(x, y, rank)


def device_finish(x, y, z):
    add_tensors(y, x, z)  # y was written by this rank's previous dispatch: program order


# =============================================================================================
# STEP 3 — level 1, the host orchestrator: control plane only. The loop index r is the rank
# (PyPTO's device=r); it flows down as an ordinary argument. Two dispatches per rank run in the
# order they were issued on that rank.
# =============================================================================================
def host_orch(h, x, y, z, pid):
    for r in range(h.world_size()):
        h.dispatch(r, device_orch, x[r], y[r], pid[r], r)
        h.dispatch(r, device_finish, x[r], y[r], z[r])


def main():
    config, _ = tutorial.parse_devices(
        "02_programming_model", "Step 02: host orchestrator -> per-rank wrapper -> kernel; y[r] = x[r] * (r+1)")
    P = config.world_size()

    def body():
        # =======================================================================================
        # STEP 4: run. The host process builds the dispatches; P forked rank processes execute
        # them.
        # =======================================================================================
        x = tutorial.random((P, ROWS, COLS), seed=2)
        y = np.zeros((P, ROWS, COLS), np.float32)
        z = np.zeros((P, ROWS, COLS), np.float32)
        pid = np.zeros((P, 1), np.int32)
        pld.run(config, host_orch, x, y, z, pid)

        host_pid = os.getpid()
        if pld.is_output_rank():
            print(f"level 1 (host orchestrator) ran in process {host_pid}")
            for r in range(P):
                print(f"levels 2+3 of rank {r} ran in process {pid[r, 0]}")

        # =======================================================================================
        # STEP 5: the golden: y[r] = x[r] * (r + 1), z[r] = y[r] + x[r]; one process per rank.
        # =======================================================================================
        factor = np.arange(P, dtype=np.float32).reshape(P, 1, 1)
        y_want = x * factor + x
        check = tutorial.Checker()
        check.expect("y", y, y_want)
        check.expect("z", z, y_want + x)
        pids = set(int(p) for p in pid[:, 0])
        check.expect("number of distinct rank processes", len(pids), P)
        # On shm the host forks one process per rank. Under mpirun (the mpi backend) there is no
        # separate host: every MPI process runs level 1 itself and levels 2+3 of its own rank.
        spmd = pld.launcher_world_size() > 0
        check.expect("rank processes include this process", host_pid in pids, spmd)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
