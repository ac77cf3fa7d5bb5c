"""Step 08 — all-reduce v1, the mesh: every rank reads every peer and reduces locally.

All-reduce: every rank holds a vector; afterwards every rank holds the element-wise sum of all
of them. The mesh schedule is the most direct one, in place on a window:
  1. stage my input in my window
  2. barrier: every rank has staged                    (read-after-write guard)
  3. read all P copies, mine included, in ascending rank order, adding them up in a tile
  4. barrier: every rank has read every copy           (write-after-read guard)
  5. store the sum into my own copy
Both barriers use one [P, 1] signal window, packaged as a self-clearing credit barrier
(credit_barrier.py): the call ends by giving back every credit it consumed, so the next call on
the same signal starts from zero. The kernel runs ROUNDS all-reduces back to back on one signal:
  out[r][k]   = sum over s of x[s][k]     for every rank r and round k
  after[r][s] = 0                         the signal cells are clean after ROUNDS calls
The same rounds then run through pld.tensor.allreduce with mode=AllreduceMode.Mesh — pld's
composite collective with this very schedule (step 11 reveals it properly) — and must agree:
  lib[r][k]   = out[r][k]

Concepts introduced:
  - all-reduce semantics; the mesh schedule: P x SIZE reads and 2 barriers per rank and call
  - CreditBarrier: sync() is barrier g = 1, 2, ... of this call, finish() step 04's -g epilogue
  - in place needs the second barrier: no rank overwrites its copy while a peer still reads it
  - one summation order on every rank (ascending ranks), so every rank gets the same bits
  - small whole numbers as data, so float sums are exact and the golden can be exact

Run:  python3 08_allreduce_mesh.py -d 0,1,2,3      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from credit_barrier import CreditBarrier  # STEP 1: the self-clearing credit barrier (read it there)

SIZE = 256  # floats per rank
ROUNDS = 3  # all-reduces per kernel call, all on the same signal


# =============================================================================================
# STEP 2: the mesh all-reduce, in place: `data` holds my input on entry and the sum on return.
# =============================================================================================
def allreduce_mesh(data, signal):
    n = pld.nranks(pld.get_comm_ctx(data))
    barrier = CreditBarrier(signal)

    barrier.sync()  # 1: every rank's input is in its window — safe to read any copy

    # Ascending rank order, my own copy included (remote_load accepts peer == me). Every rank adds
    # the same values in the same order, so every rank gets the same bits — even for data whose
    # float sum depends on the order (starting from your own copy would not give you that).
    total = pld.tile.remote_load(data, 0, (0, 0), (1, SIZE))
    for p in range(1, n):
        total = total + pld.tile.remote_load(data, p, (0, 0), (1, SIZE))

    barrier.sync()  # 2: every rank has read every copy — now, and only now, I may overwrite mine
    pld.tile.store(total, (0, 0), data)
    barrier.finish()  # 2 credits per peer consumed, 2 given back: the signal is clean again


# =============================================================================================
# STEP 3: the kernel: ROUNDS all-reduces on one signal, then the same through pld's composite.
# =============================================================================================
def mesh_kernel(x, out, lib_out, after, data, signal, lib, lib_signal):
    n = pld.nranks(pld.get_comm_ctx(data))
    for k in range(ROUNDS):
        tile = pld.tile.load(x, (k, 0), (1, SIZE))

        # Hand-rolled. Restaging right after the previous round is safe: that round's second
        # barrier guaranteed nobody reads my copy any more.
        pld.tile.store(tile, (0, 0), data)
        allreduce_mesh(data, signal)
        pld.tile.store(pld.tile.load(data, (0, 0), (1, SIZE)), (k, 0), out)

        # pld's composite of the same schedule: in place on its own window, with its own signal.
        # (Never share a signal between your protocol and a library collective.)
        pld.tile.store(tile, (0, 0), lib)
        pld.tensor.allreduce(lib, lib_signal, mode=pld.AllreduceMode.Mesh)
        pld.tile.store(pld.tile.load(lib, (0, 0), (1, SIZE)), (k, 0), lib_out)
    # Every peer added 2 x ROUNDS credits to its cell and I gave all of them back.
    for s in range(n):
        pld.tile.write(after, (s,), pld.tile.read(signal, (s, 0)))


# =============================================================================================
# STEP 4: the host orchestrator: two data windows, two [P, 1] signal windows.
# =============================================================================================
def mesh_program(h, x, out, lib_out, after):
    P = h.world_size()
    data_buf = h.alloc_window_buffer((1, SIZE), np.float32, "data")
    signal_buf = h.alloc_window_buffer((P, 1), np.int32, "signal")
    lib_buf = h.alloc_window_buffer((1, SIZE), np.float32, "lib_data")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, mesh_kernel, x[r], out[r], lib_out[r], after[r], h.window(data_buf, (1, SIZE), np.float32),
                   h.window(signal_buf, (P, 1), np.int32), h.window(lib_buf, (1, SIZE), np.float32),
                   h.window(lib_signal_buf, (P, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "08_allreduce_mesh", "Step 08: all-reduce, mesh schedule, by hand and with pld.tensor.allreduce")
    P = config.world_size()

    def body():
        x = tutorial.small_integers((P, ROUNDS, SIZE), seed=8)
        out = np.zeros((P, ROUNDS, SIZE), np.float32)
        lib_out = np.zeros((P, ROUNDS, SIZE), np.float32)
        after = np.full((P, P), -1, np.int32)
        pld.run(config, mesh_program, x, out, lib_out, after)

        # =======================================================================================
        # STEP 5: the golden: the sum over ranks, on the host.
        # =======================================================================================
        want = np.broadcast_to(x.sum(axis=0), x.shape)
        if pld.is_output_rank():
            print(f"P = {P}: per all-reduce each rank read {P} x {SIZE} floats and crossed 2 barriers")
            print("round 0: x[*][0][0] = " + " ".join(f"{v:g}" for v in x[:, 0, 0]) +
                  " -> out[*][0][0] = " + " ".join(f"{v:g}" for v in out[:, 0, 0]))
        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        check.expect("after", after, np.zeros((P, P), np.int32))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
