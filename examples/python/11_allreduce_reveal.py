"""Step 11 — the reveal: the all-reduce you wrote in step 08 is one line of pld.

pld ships the collectives of steps 08–10, built from the same notify / wait / window access you
used, on the same self-clearing credit barrier. Two ways to call one:
  in a kernel (the composite):      pld.tensor.allreduce(data, signal, op=, mode=, core_num=)
  in the orchestrator (a builtin):  h.allreduce(data[, signal], ...)
                                    = one builtin dispatch per rank, in program order with the
                                      rank's other dispatches; without a signal pld uses its own
This program runs the same all-reduce seven ways and checks that all seven give the SAME BITS
as a golden summed on the host in ascending rank order — with arbitrary floats this time, not
step 08's whole numbers:
  hand      step 08's hand-rolled mesh (ascending rank order)
  lib[0..3] pld.tensor.allreduce with Auto, Mesh, TwoShot, and Ring with reproducible=True
  host[0,1] h.allreduce(data) and h.allreduce(data, core_num=4)
  max       pld.tensor.allreduce with op=ReduceOp.Max (every ReduceOp works)
Float addition is not associative: only the same order gives the same bits. pld's Mesh and
TwoShot add ranks in ascending order, like the hand-rolled mesh and the golden. Its Ring adds in
ring order (different bits for general floats); reproducible=True (or PLD_REPRODUCIBLE=1) makes
a Ring request run TwoShot instead.

Concepts introduced:
  - pld.tensor.allreduce(target, signal, **options) — in place, returns target
  - AllreduceMode: Auto, Mesh, TwoShot, Ring; ReduceOp: Sum, Max, Min, Prod; core_num lanes per
    rank — options are keyword arguments
  - h.allreduce(...) between ordinary dispatches: stage, all-reduce, collect
  - one signal serves any number of back-to-back calls (self-clearing)
  - bit-reproducibility is a property of the reduction order, not of the algorithm

Run:  python3 11_allreduce_reveal.py -d 0,1,2,3      (any number of ranks)
"""

import importlib
import sys

import numpy as np

import pld
import tutorial
from tutorial import collect, stage

SIZE = 256

# The composite calls of STEP 2, in order (lib row k used the options LIB_PATHS[k]).
LIB_PATHS = [
    ("tensor.allreduce Auto", dict(mode=pld.AllreduceMode.Auto)),
    ("tensor.allreduce Mesh", dict(mode=pld.AllreduceMode.Mesh)),
    ("tensor.allreduce TwoShot", dict(mode=pld.AllreduceMode.TwoShot)),
    ("tensor.allreduce Ring+reproducible", dict(mode=pld.AllreduceMode.Ring, reproducible=True)),
]
HOST_PATHS = 2


# =============================================================================================
# STEP 1: step 08's hand-rolled mesh all-reduce, unchanged: imported from the step's own file
# (its name starts with a digit, so through importlib).
# =============================================================================================
allreduce_mesh = importlib.import_module("08_allreduce_mesh").allreduce_mesh


# =============================================================================================
# STEP 2: the kernel: the hand-rolled mesh, then the same reduction as ONE line of pld, four
# schedules back to back on one signal, then a Max. Restaging right after a call is safe: every
# pld collective ends with a barrier after its last access to a peer's copy.
# =============================================================================================
def reveal_kernel(x, hand_out, lib_out, max_out, hand, hand_signal, lib, lib_signal):
    tile = pld.tile.load(x, (0, 0), (1, SIZE))

    pld.tile.store(tile, (0, 0), hand)
    allreduce_mesh(hand, hand_signal)
    pld.tile.store(pld.tile.load(hand, (0, 0), (1, SIZE)), (0, 0), hand_out)

    for k, (_, options) in enumerate(LIB_PATHS):
        pld.tile.store(tile, (0, 0), lib)
        pld.tensor.allreduce(lib, lib_signal, **options)  # <- the whole of step 08
        pld.tile.store(pld.tile.load(lib, (0, 0), (1, SIZE)), (k, 0), lib_out)

    pld.tile.store(tile, (0, 0), lib)
    pld.tensor.allreduce(lib, lib_signal, op=pld.ReduceOp.Max)
    pld.tile.store(pld.tile.load(lib, (0, 0), (1, SIZE)), (0, 0), max_out)


# =============================================================================================
# STEP 3: the host orchestrator. Part 1 dispatches the kernel above. Part 2 is the host builtin:
# stage on every rank, h.allreduce, collect on every rank — each rank runs its three dispatches
# in program order, so no signal of yours is needed between them. (stage and collect, a put /
# get to yourself, are in tutorial.py.)
# =============================================================================================
def reveal_program(h, x, hand_out, lib_out, max_out, host_out):
    P = h.world_size()
    hand_buf = h.alloc_window_buffer((1, SIZE), np.float32, "hand_data")
    hand_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "hand_signal")
    lib_buf = h.alloc_window_buffer((1, SIZE), np.float32, "lib_data")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, reveal_kernel, x[r], hand_out[r], lib_out[r], max_out[r],
                   h.window(hand_buf, (1, SIZE), np.float32), h.window(hand_signal_buf, (P, 1), np.int32),
                   h.window(lib_buf, (1, SIZE), np.float32), h.window(lib_signal_buf, (P, 1), np.int32))

    host_buf = h.alloc_window_buffer((1, SIZE), np.float32, "host_data")
    data = h.window(host_buf, (1, SIZE), np.float32)
    for k in range(HOST_PATHS):
        for r in range(P):
            h.dispatch(r, stage, x[r], data)
        if k == 0:
            h.allreduce(data)  # <- the whole of step 08, from the orchestrator
        else:
            h.allreduce(data, core_num=4)  # 4 threads per rank split the vector
        for r in range(P):
            h.dispatch(r, collect, data, host_out[r][k])


def main():
    config, _ = tutorial.parse_devices(
        "11_allreduce_reveal", "Step 11: the hand-rolled all-reduce vs pld.tensor.allreduce / h.allreduce")
    P = config.world_size()

    def body():
        x = tutorial.random((P, 1, SIZE), seed=11)  # arbitrary floats in [-1, 1)
        hand_out = np.zeros((P, 1, SIZE), np.float32)
        lib_out = np.zeros((P, len(LIB_PATHS), SIZE), np.float32)
        max_out = np.zeros((P, 1, SIZE), np.float32)
        host_out = np.zeros((P, HOST_PATHS, 1, SIZE), np.float32)
        pld.run(config, reveal_program, x, hand_out, lib_out, max_out, host_out)

        # =======================================================================================
        # STEP 4: the golden: float sums in ascending rank order (the order fixes the bits),
        # maxima. float32 + float32 in numpy rounds to float32 at every step, as a rank does.
        # =======================================================================================
        golden_sum = x[0, 0].copy()
        for r in range(1, P):
            golden_sum = golden_sum + x[r, 0]
        golden_max = x[:, 0].max(axis=0)

        if pld.is_output_rank():
            print(f"element 0 on the last rank, {P} ranks summed:")
            print(f"  {'golden (host, ascending ranks)':<38} {golden_sum[0]:.9g}")
            print(f"  {'hand-rolled mesh (step 08)':<38} {hand_out[P - 1, 0, 0]:.9g}")
            for k, (name, _) in enumerate(LIB_PATHS):
                print(f"  {name:<38} {lib_out[P - 1, k, 0]:.9g}")
            print(f"  {'h.allreduce':<38} {host_out[P - 1, 0, 0, 0]:.9g}")
            print(f"  {'h.allreduce core_num 4':<38} {host_out[P - 1, 1, 0, 0]:.9g}")
            print(f"  {'tensor.allreduce Max':<38} {max_out[P - 1, 0, 0]:.9g} (golden {golden_max[0]:.9g})")

        check = tutorial.Checker()
        check.expect("hand", hand_out, np.broadcast_to(golden_sum, hand_out.shape))
        check.expect("lib", lib_out, np.broadcast_to(golden_sum, lib_out.shape))
        check.expect("host", host_out, np.broadcast_to(golden_sum, host_out.shape))
        check.expect("max", max_out, np.broadcast_to(golden_max, max_out.shape))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
