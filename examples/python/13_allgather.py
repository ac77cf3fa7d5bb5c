"""Step 13 — all-gather: every rank's slice to every rank.

Each rank contributes a [1, SIZE] slice; afterwards every rank holds all P slices in rank
order, [P, SIZE]. Step 07 built one as a relay around the ring (P-1 hops, one slice each).
Here every rank fetches every slice directly — a pull, between two barriers:
  stage my slice in my window -> barrier (all staged) -> remote_load every rank's slice into
  my rank-local output -> barrier (nobody reads my slice any more: I may restage)
That is step 08's mesh all-reduce without the additions. pld's allgather is the mirror image,
a push: every rank puts its slice into row `me` of every rank's [P, SIZE] target window.
  pull: the source must be staged in a window (peers read it); the result may land anywhere,
        even rank-local memory; the reader decides when it reads
  push: the source may be rank-local (only its owner reads it); the result must land in a
        window; the first barrier guards the TARGET (nobody still reads the previous result)
ROUNDS all-gathers, on one signal each path:
  out[r][k]  = [x[0][k]; ...; x[P-1][k]]   hand-rolled pull
  lib[r][k]  = the same                     pld.tensor.allgather(local, target, signal)
  host[r][k] = the same                     h.allgather(local_window, target)

Concepts introduced:
  - all-gather semantics: row s of the result is rank s's slice, on every rank
  - pull vs push: who reads whose memory, where staging is needed, which copy each barrier
    protects
  - pld.tensor.allgather: `local` is a rank-local array or a window, never the target;
    h.allgather needs both as windows

Run:  python3 13_allgather.py -d 0,1,2,3      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from credit_barrier import CreditBarrier  # STEP 1: step 08's self-clearing credit barrier
from tutorial import collect, stage

SIZE = 128
ROUNDS = 2


# =============================================================================================
# STEP 2: the hand-rolled pull all-gather. `slice_win` is my [1, SIZE] window with my slice
# staged; `out` is rank-local [P, SIZE].
# =============================================================================================
def allgather_pull(slice_win, out, signal):
    n = pld.nranks(pld.get_comm_ctx(slice_win))
    barrier = CreditBarrier(signal)
    barrier.sync()  # 1: every slice is staged
    for s in range(n):
        pld.tile.store(pld.tile.remote_load(slice_win, s, (0, 0), (1, SIZE)), (s, 0), out)
    barrier.sync()  # 2: every rank has read my slice
    barrier.finish()


# =============================================================================================
# STEP 3: the kernel: ROUNDS hand-rolled all-gathers, each followed by pld's.
# =============================================================================================
def allgather_kernel(x, out, lib_out, slice_win, signal, gathered, lib_signal):
    me = pld.rank(pld.get_comm_ctx(slice_win))
    for k in range(ROUNDS):
        pld.tensor.put(slice_win, me, x[k])  # stage: a pull needs my slice in my window
        allgather_pull(slice_win, out[k], signal)

        # pld pushes straight from rank-local x[k]: no staging, the result lands in `gathered`.
        pld.tensor.allgather(x[k], gathered, lib_signal)
        pld.tensor.get(lib_out[k], me, gathered)


# =============================================================================================
# STEP 4: the host orchestrator. The builtin's operands are windows: `local` [1, SIZE] and the
# target [P, SIZE], two different buffers (stage and collect are in tutorial.py).
# =============================================================================================
def allgather_program(h, x, out, lib_out, host_out):
    P = h.world_size()
    slice_buf = h.alloc_window_buffer((1, SIZE), np.float32, "slice")
    signal_buf = h.alloc_window_buffer((P, 1), np.int32, "signal")
    gathered_buf = h.alloc_window_buffer((P, SIZE), np.float32, "lib_gathered")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, allgather_kernel, x[r], out[r], lib_out[r], h.window(slice_buf, (1, SIZE), np.float32),
                   h.window(signal_buf, (P, 1), np.int32), h.window(gathered_buf, (P, SIZE), np.float32),
                   h.window(lib_signal_buf, (P, 1), np.int32))

    local = h.window(h.alloc_window_buffer((1, SIZE), np.float32, "host_local"), (1, SIZE), np.float32)
    target = h.window(h.alloc_window_buffer((P, SIZE), np.float32, "host_gathered"), (P, SIZE), np.float32)
    for k in range(ROUNDS):
        for r in range(P):
            h.dispatch(r, stage, x[r][k], local)
        h.allgather(local, target)
        for r in range(P):
            h.dispatch(r, collect, target, host_out[r][k])


def main():
    config, _ = tutorial.parse_devices(
        "13_allgather", "Step 13: all-gather by pull, then pld.tensor.allgather / h.allgather (push)")
    P = config.world_size()

    def body():
        x = tutorial.random((P, ROUNDS, 1, SIZE), seed=13)
        out = np.zeros((P, ROUNDS, P, SIZE), np.float32)
        lib_out = np.zeros((P, ROUNDS, P, SIZE), np.float32)
        host_out = np.zeros((P, ROUNDS, P, SIZE), np.float32)
        pld.run(config, allgather_program, x, out, lib_out, host_out)
        if pld.is_output_rank():
            print(f"round 0, element 0 of the slices of ranks 0..{P - 1}: "
                  + " ".join(f"{v:.4f}" for v in x[:, 0, 0, 0]))
            print(f"round 0, element 0 of rank {P - 1}'s gathered rows:  " +
                  " ".join(f"{v:.4f}" for v in out[P - 1, 0, :, 0]))

        # =======================================================================================
        # STEP 5: the golden: row s of every rank's result is rank s's slice.
        # =======================================================================================
        rows = x[:, :, 0, :].transpose(1, 0, 2)  # [ROUNDS, P, SIZE]: round k, row s = x[s][k]
        want = np.broadcast_to(rows, (P, ROUNDS, P, SIZE))
        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        check.expect("host", host_out, want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
