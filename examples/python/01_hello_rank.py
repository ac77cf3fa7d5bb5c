"""Step 01 — hello, rank.

The same kernel runs on every rank; each rank learns who it is and acts on its own slice.
Every rank computes y[r] = x[r] + r, so the output row alone tells you which rank wrote it.

Concepts introduced:
  - pld.DistributedConfig(device_ids=...): one rank per device id (here from `-d 0,1,...`)
  - pld.run(config, orchestrator, *arrays): fork the ranks, run, join, raise on failure; numpy
    arrays passed in are shared with the ranks for the call and hold the results afterwards
  - the host orchestrator loop `for r in range(h.world_size()): h.dispatch(r, kernel, ...)`
    (PyPTO's `for r in pl.range(pld.world_size()): f(..., device=r)`)
  - rank identity, two ways: the loop index r passed down as an argument, and
    pld.rank(ctx) / pld.nranks(ctx) from the comm context of a window

Run:  python3 01_hello_rank.py -d 0,1      (any number of ranks: -d 0,1,2,3)
"""

import sys

import numpy as np

import pld
import tutorial

ROWS = 8
COLS = 8


# =============================================================================================
# STEP 1: the kernel. It runs inside rank r's process and sees only rank r's slices:
# x and y are [ROWS, COLS] views (x[r], y[r] of the host arrays), `who` is rank r's [3] row.
# =============================================================================================
def hello_kernel(x, y, who, ident, host_r):
    # Identity from the comm context: every window view belongs to a comm domain (here the
    # world), and its ctx knows this rank's index and the domain size. `ident` is a one-cell window
    # whose only job is to carry that ctx; step 03 shows what windows are for.
    ctx = pld.get_comm_ctx(ident)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)

    # y = x + me. A tile is a numpy array: the math is numpy's.
    t = pld.tile.load(x, (0, 0), (ROWS, COLS))
    pld.tile.store(t + np.float32(me), (0, 0), y)

    # Report what this rank believes about itself; the host checks it.
    pld.tile.write(who, (0,), me)      # rank(ctx)
    pld.tile.write(who, (1,), n)       # nranks(ctx)
    pld.tile.write(who, (2,), host_r)  # the loop index the host passed


# =============================================================================================
# STEP 2: the host orchestrator. It runs in the host process, the only place that sees every
# rank: it slices the world-shaped arrays per rank and dispatches one kernel call per rank.
# =============================================================================================
def hello_rank(h, x, y, who):
    ident_buf = h.alloc_window_buffer((1, 1), pld.DType.INT32, "ident")
    for r in range(h.world_size()):  # one dispatch per rank: rank r runs on device_ids[r]
        h.dispatch(r, hello_kernel, x[r], y[r], who[r], h.window(ident_buf, (1, 1), np.int32), r)


def main():
    # ===========================================================================================
    # STEP 3: the configuration: `-d 0,1,2` means three ranks, rank r on device r.
    # ===========================================================================================
    config, _ = tutorial.parse_devices("01_hello_rank", "Step 01: every rank computes y[r] = x[r] + r")
    P = config.world_size()

    def body():
        # =======================================================================================
        # STEP 4: world-shaped arrays (rank r owns x[r], y[r], who[r]) and one pld.run.
        # =======================================================================================
        x = tutorial.random((P, ROWS, COLS), seed=1)
        y = np.zeros((P, ROWS, COLS), np.float32)
        who = np.zeros((P, 3), np.int32)
        pld.run(config, hello_rank, x, y, who)  # forks P ranks, blocks until all finish

        if pld.is_output_rank():
            for r in range(P):
                print(f"rank {who[r, 0]} of {who[r, 1]} (device {config.device_ids[r]}, dispatched as "
                      f"r={who[r, 2]}): y = x + {who[r, 0]}")

        # =======================================================================================
        # STEP 5: the golden, computed on the host: y[r] = x[r] + r, and every rank knew who it
        # was.
        # =======================================================================================
        ranks = np.arange(P, dtype=np.float32).reshape(P, 1, 1)
        who_want = np.array([[r, P, r] for r in range(P)], np.int32)
        check = tutorial.Checker()
        check.expect("y", y, x + ranks)
        check.expect("who", who, who_want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
