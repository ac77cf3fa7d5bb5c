"""Step 09 — all-reduce v2, two phases: reduce-scatter, then all-gather.

The mesh of step 08 makes every rank read all P copies of the whole vector: P x SIZE reads per
rank. Split the vector into P segments instead and give each rank one segment to own:
  phase 1, reduce-scatter: rank r reads segment r of every copy and reduces it   (SIZE reads)
  phase 2, all-gather:     rank r pushes its reduced segment into segment r of every copy
                                                                                 (SIZE writes)
In place on a window, between the two barriers of a self-clearing credit barrier:
  barrier (every input staged) -> phase 1 -> phase 2 -> barrier (every segment landed)
No barrier is needed between the phases: after the first barrier, segment r of ANY copy is
read and written by rank r alone, and a rank's own reads come before its own writes.

  out[r][k] = sum over s of x[s][k]          for every rank r and round k
  lib[r][k] = the same through pld.tensor.allreduce with mode=AllreduceMode.TwoShot

Concepts introduced:
  - segments of a vector over P ranks: [s * SIZE // P, (s + 1) * SIZE // P) — they cover every
    element once, sizes differ by at most 1, at any P
  - ownership instead of synchronisation: one writer per segment makes the middle barrier
    unnecessary
  - push results with pld.tile.remote_store into every copy, your own included
  - all-reduce = reduce-scatter + all-gather (steps 13 and 14 reveal both halves)

Run:  python3 09_allreduce_two_phase.py -d 0,1,2      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from credit_barrier import CreditBarrier  # STEP 1: step 08's self-clearing credit barrier

SIZE = 256  # floats per rank; 256 / 3 is not whole: segments of 85, 85, 86
ROUNDS = 2


# =============================================================================================
# STEP 2: segment s of SIZE elements over n ranks: (begin, length). Integer arithmetic.
# =============================================================================================
def segment(s, n):
    begin, end = SIZE * s // n, SIZE * (s + 1) // n
    return begin, end - begin


# =============================================================================================
# STEP 3: the two-phase all-reduce, in place: `data` holds my input on entry, the sum on return.
# =============================================================================================
def allreduce_two_phase(data, signal):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    begin, length = segment(me, n)
    barrier = CreditBarrier(signal)

    barrier.sync()  # 1: every rank's input is staged

    # Phase 1, reduce-scatter: my segment of every copy, ranks in ascending order (the same order
    # for every segment, so the result does not depend on who owns which segment).
    total = pld.tile.remote_load(data, 0, (0, begin), (1, length))
    for p in range(1, n):
        total = total + pld.tile.remote_load(data, p, (0, begin), (1, length))

    # Phase 2, all-gather: my reduced segment into segment `me` of every copy. Nobody else reads
    # or writes that segment, so no barrier between the phases. Start with the next rank, not
    # rank 0, so that the P ranks do not all write to the same rank at the same moment.
    for k in range(1, n + 1):
        pld.tile.remote_store(total, data, (me + k) % n, (0, begin))

    barrier.sync()  # 2: every segment has landed in every copy (and nobody reads mine any more)
    barrier.finish()


# =============================================================================================
# STEP 4: the kernel: ROUNDS hand-rolled all-reduces on one signal, the same through pld.
# =============================================================================================
def two_phase_kernel(x, out, lib_out, data, signal, lib, lib_signal):
    for k in range(ROUNDS):
        tile = pld.tile.load(x, (k, 0), (1, SIZE))

        pld.tile.store(tile, (0, 0), data)
        allreduce_two_phase(data, signal)
        pld.tile.store(pld.tile.load(data, (0, 0), (1, SIZE)), (k, 0), out)

        # pld's composite with the same schedule (its segments are split the same way).
        pld.tile.store(tile, (0, 0), lib)
        pld.tensor.allreduce(lib, lib_signal, mode=pld.AllreduceMode.TwoShot)
        pld.tile.store(pld.tile.load(lib, (0, 0), (1, SIZE)), (k, 0), lib_out)


# =============================================================================================
# STEP 5: the host orchestrator.
# =============================================================================================
def two_phase_program(h, x, out, lib_out):
    P = h.world_size()
    data_buf = h.alloc_window_buffer((1, SIZE), np.float32, "data")
    signal_buf = h.alloc_window_buffer((P, 1), np.int32, "signal")
    lib_buf = h.alloc_window_buffer((1, SIZE), np.float32, "lib_data")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, two_phase_kernel, x[r], out[r], lib_out[r], h.window(data_buf, (1, SIZE), np.float32),
                   h.window(signal_buf, (P, 1), np.int32), h.window(lib_buf, (1, SIZE), np.float32),
                   h.window(lib_signal_buf, (P, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "09_allreduce_two_phase", "Step 09: all-reduce as reduce-scatter + all-gather, by hand and with pld")
    P = config.world_size()

    def body():
        x = tutorial.small_integers((P, ROUNDS, SIZE), seed=9)
        out = np.zeros((P, ROUNDS, SIZE), np.float32)
        lib_out = np.zeros((P, ROUNDS, SIZE), np.float32)
        pld.run(config, two_phase_program, x, out, lib_out)

        if pld.is_output_rank():
            bounds = " ".join(f"[{b}, {b + length})" for b, length in (segment(s, P) for s in range(P)))
            print(f"P = {P}: segments {bounds}")
            print(f"per all-reduce each rank read {SIZE} and wrote {SIZE} floats (the mesh reads {P * SIZE})")

        # =======================================================================================
        # STEP 6: the golden.
        # =======================================================================================
        want = np.broadcast_to(x.sum(axis=0), x.shape)
        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
