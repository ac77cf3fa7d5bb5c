"""Step 14 — reduce-scatter: reduce P rows over P ranks, one row per rank.

Every rank stages P rows in a [P, SIZE] window — row d is its contribution to rank d. After the
call, row r of rank r's copy holds the reduction over all ranks of their row r; the other rows
are left as they were. It is phase 1 of step 09's all-reduce, on its own (add step 13's
all-gather and you have the all-reduce again). In place, between two barriers:
  barrier (every rank staged its rows)
  -> read row `me` of every copy, ascending ranks, combine with the op
  -> store the result into row `me` of MY copy — before the second barrier, because nobody
     else ever reads row `me` of my copy (rank q reads only row q)
  -> barrier (every rank has read its row of my copy: I may restage)
Two rounds, one signal: round 0 sums, round 1 takes the maximum.
  out[r][k]  = rank r's whole [P, SIZE] copy after the call: row r reduced, other rows = x[r][k]
  lib[r][k]  = the same through pld.tensor.reduce_scatter(target, signal, op=op)
  host[r][k] = the same through h.reduce_scatter(target, op=op)

Concepts introduced:
  - reduce-scatter semantics, in place; the contract "other rows are left as they were"
  - any ReduceOp by hand with numpy: +, np.maximum, np.minimum, *, the same order on every rank
  - which barrier can go: the store needs none (one reader of my row), the restage does
  - pld.tensor.reduce_scatter and h.reduce_scatter with a ReduceOp

Run:  python3 14_reduce_scatter.py -d 0,1,2,3      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from credit_barrier import CreditBarrier  # STEP 1: step 08's self-clearing credit barrier
from tutorial import collect, stage

SIZE = 64  # floats per row; each rank stages P rows
OPS = (pld.ReduceOp.Sum, pld.ReduceOp.Max)  # round k reduces with OPS[k]

# =============================================================================================
# STEP 2: one ReduceOp on two tiles (numpy arrays).
# =============================================================================================
COMBINE = {
    pld.ReduceOp.Sum: np.add,
    pld.ReduceOp.Max: np.maximum,
    pld.ReduceOp.Min: np.minimum,
    pld.ReduceOp.Prod: np.multiply,
}


# =============================================================================================
# STEP 3: the hand-rolled reduce-scatter, in place on a [P, SIZE] window.
# =============================================================================================
def reduce_scatter(data, signal, op):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    barrier = CreditBarrier(signal)

    barrier.sync()  # 1: every rank has staged all its rows
    acc = pld.tile.remote_load(data, 0, (me, 0), (1, SIZE))
    for p in range(1, n):
        acc = COMBINE[op](acc, pld.tile.remote_load(data, p, (me, 0), (1, SIZE)))
    pld.tile.store(acc, (me, 0), data)  # row `me` of my copy: I am its only reader

    barrier.sync()  # 2: every rank has read its row of my copy
    barrier.finish()


# =============================================================================================
# STEP 4: the kernel: both rounds by hand, each followed by pld's composite.
# =============================================================================================
def reduce_scatter_kernel(x, out, lib_out, data, signal, lib, lib_signal):
    me = pld.rank(pld.get_comm_ctx(data))
    for k, op in enumerate(OPS):
        pld.tensor.put(data, me, x[k])  # stage all P rows
        reduce_scatter(data, signal, op)
        pld.tensor.get(out[k], me, data)  # the whole copy, to check the untouched rows too

        pld.tensor.put(lib, me, x[k])
        pld.tensor.reduce_scatter(lib, lib_signal, op=op)
        pld.tensor.get(lib_out[k], me, lib)


# =============================================================================================
# STEP 5: the host orchestrator (stage and collect are in tutorial.py).
# =============================================================================================
def reduce_scatter_program(h, x, out, lib_out, host_out):
    P = h.world_size()
    data_buf = h.alloc_window_buffer((P, SIZE), np.float32, "data")
    signal_buf = h.alloc_window_buffer((P, 1), np.int32, "signal")
    lib_buf = h.alloc_window_buffer((P, SIZE), np.float32, "lib_data")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, reduce_scatter_kernel, x[r], out[r], lib_out[r], h.window(data_buf, (P, SIZE), np.float32),
                   h.window(signal_buf, (P, 1), np.int32), h.window(lib_buf, (P, SIZE), np.float32),
                   h.window(lib_signal_buf, (P, 1), np.int32))

    target = h.window(h.alloc_window_buffer((P, SIZE), np.float32, "host_data"), (P, SIZE), np.float32)
    for k, op in enumerate(OPS):
        for r in range(P):
            h.dispatch(r, stage, x[r][k], target)
        h.reduce_scatter(target, op=op)
        for r in range(P):
            h.dispatch(r, collect, target, host_out[r][k])


def main():
    config, _ = tutorial.parse_devices(
        "14_reduce_scatter", "Step 14: reduce-scatter by hand (Sum, Max), then pld's composite and builtin")
    P = config.world_size()
    rounds = len(OPS)

    def body():
        x = tutorial.small_integers((P, rounds, P, SIZE), seed=14)
        out = np.zeros((P, rounds, P, SIZE), np.float32)
        lib_out = np.zeros((P, rounds, P, SIZE), np.float32)
        host_out = np.zeros((P, rounds, P, SIZE), np.float32)
        pld.run(config, reduce_scatter_program, x, out, lib_out, host_out)

        # =======================================================================================
        # STEP 6: the golden: row r of rank r reduced over ranks, every other row untouched.
        # =======================================================================================
        want = x.copy()  # what each rank staged
        for k, op in enumerate(OPS):
            reduced = COMBINE[op].reduce(x[:, k], axis=0)  # [P, SIZE]: row d over all ranks
            for r in range(P):
                want[r, k, r] = reduced[r]
        if pld.is_output_rank():
            for k, op in enumerate(OPS):
                print(f"round {k}, row 0, element 0, staged by ranks 0..{P - 1}: " +
                      " ".join(f"{v:g}" for v in x[:, k, 0, 0]) + f" -> rank 0 holds {op.name} = {out[0, k, 0, 0]:g}")

        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        check.expect("host", host_out, want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
