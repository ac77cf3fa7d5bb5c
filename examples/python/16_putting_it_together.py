"""Step 16 — putting it together: broadcast + all-reduce + all-gather in one kernel.

A toy data-parallel step, with each collective doing the job it exists for:
  1. broadcast   the root's parameters w to every rank            w  = w_in[root]
  2. compute     a local contribution from the rank's own data      y_r = w * x_r
  3. all-reduce  the contributions                                  s  = sum over r of y_r
  4. compute     a per-rank result                                  z_r = s * x_r
  5. all-gather  the results, so every rank sees every rank's       Z  = [z_0; ...; z_{P-1}]
Path A runs it as ONE kernel per rank with pld's composite collectives, all three on ONE
signal window: each call gives its credits back, so calls in sequence can share a signal
(concurrent ones could not). The pipeline runs ITERS times, with a different root each time.
Path B runs the same pipeline from the orchestrator with host builtins between small compute
dispatches (h.broadcast, h.allreduce, h.allgather): no kernel sees a collective at all.
  w[r][it] = w_in[root_it][it],  s[r][it] = s,  gathered[r][it] = Z     (both paths)
Data are small whole numbers, so every product and sum is exact.

Concepts introduced:
  - composing collectives: in-place targets, what to stage before each call, what a call
    leaves where (broadcast: the root's copy; all-reduce: the sum in place; all-gather: [P, SIZE])
  - one signal for a sequence of collectives; separate signals only for concurrent ones
  - a collective's `local` operand may be any rank-local array (here: the output row z_r)
  - the same program as one kernel (composites) or as an orchestration (host builtins)

Run:  python3 16_putting_it_together.py -d 0,1,2,3      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from tutorial import collect, stage

SIZE = 128
ITERS = 2


def root_of(it, n):
    """The root of iteration `it`: the last rank, then the one before it, ..."""
    return (n - 1 - it) % n


# =============================================================================================
# STEP 1: path A, the kernel. Windows: w, acc ([1, SIZE]), gathered ([P, SIZE]); one signal.
# Rank-local: w_in, x ([ITERS, 1, SIZE]), and the outputs.
# =============================================================================================
def pipeline_kernel(w_in, x, w_out, s_out, z_out, gathered_out, w, acc, gathered, signal):
    ctx = pld.get_comm_ctx(w)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    for it in range(ITERS):
        root = root_of(it, n)
        xi = pld.tile.load(x[it], (0, 0), (1, SIZE))

        # 1. broadcast: only the root stages; everyone's w becomes the root's.
        if me == root:
            pld.tensor.put(w, me, w_in[it])
        pld.tensor.broadcast(w, signal, root=root)
        wt = pld.tile.load(w, (0, 0), (1, SIZE))
        pld.tile.store(wt, (0, 0), w_out[it])

        # 2 + 3. my contribution, staged in `acc`; the all-reduce sums it in place.
        pld.tile.store(wt * xi, (0, 0), acc)
        pld.tensor.allreduce(acc, signal)
        st = pld.tile.load(acc, (0, 0), (1, SIZE))
        pld.tile.store(st, (0, 0), s_out[it])

        # 4 + 5. my result goes to a rank-local array, which the all-gather pushes to every rank.
        pld.tile.store(st * xi, (0, 0), z_out[it])
        pld.tensor.allgather(z_out[it], gathered, signal)
        pld.tensor.get(gathered_out[it], me, gathered)


# =============================================================================================
# STEP 2: path B's small kernels: the compute step (staging and collecting are tutorial.py's
# stage and collect).
# =============================================================================================
def multiply(a, x, dst):
    """dst = a * x, with a read from my copy of a window (a [1, SIZE] view)."""
    at = pld.tile.load(a, (0, 0), (1, SIZE))
    pld.tile.store(at * pld.tile.load(x, (0, 0), (1, SIZE)), (0, 0), dst)


# =============================================================================================
# STEP 3: the host orchestrator: path A (one dispatch per rank), then path B, step by step.
# A rank starts path B as soon as ITS path A is done, while others may still be in path A; path
# B's own windows keep the two paths from ever touching the same memory.
# =============================================================================================
def pipeline_program(h, w_in, x, w_out, s_out, z_out, gathered_out, host_w, host_s, host_gathered):
    P = h.world_size()

    def window(shape, dtype, name):
        return h.window(h.alloc_window_buffer(shape, dtype, name), shape, dtype)

    signal = window((P, 1), np.int32, "signal")
    w, acc = window((1, SIZE), np.float32, "w"), window((1, SIZE), np.float32, "acc")
    gathered = window((P, SIZE), np.float32, "gathered")
    for r in range(P):
        h.dispatch(r, pipeline_kernel, w_in[r], x[r], w_out[r], s_out[r], z_out[r], gathered_out[r], w, acc, gathered,
                   signal)

    # Path B. The builtins use pld's own signal; the all-gather's `local` must be a window here.
    hw, hacc = window((1, SIZE), np.float32, "host_w"), window((1, SIZE), np.float32, "host_acc")
    hz = window((1, SIZE), np.float32, "host_z")
    hgathered = window((P, SIZE), np.float32, "host_gathered")
    for it in range(ITERS):
        root = root_of(it, P)
        h.dispatch(root, stage, w_in[root][it], hw)
        h.broadcast(hw, root=root)
        for r in range(P):
            h.dispatch(r, collect, hw, host_w[r][it])
            h.dispatch(r, multiply, hw, x[r][it], hacc)
        h.allreduce(hacc)
        for r in range(P):
            h.dispatch(r, collect, hacc, host_s[r][it])
            h.dispatch(r, multiply, hacc, x[r][it], hz)
        h.allgather(hz, hgathered)
        for r in range(P):
            h.dispatch(r, collect, hgathered, host_gathered[r][it])


def main():
    config, _ = tutorial.parse_devices(
        "16_putting_it_together", "Step 16: broadcast + all-reduce + all-gather in one kernel, and as host builtins")
    P = config.world_size()

    def body():
        w_in = tutorial.small_integers((P, ITERS, 1, SIZE), seed=161)  # only the root's row matters
        x = tutorial.small_integers((P, ITERS, 1, SIZE), seed=162)
        w_out, s_out, z_out = (np.zeros((P, ITERS, 1, SIZE), np.float32) for _ in range(3))
        gathered_out = np.zeros((P, ITERS, P, SIZE), np.float32)
        host_w, host_s = (np.zeros((P, ITERS, 1, SIZE), np.float32) for _ in range(2))
        host_gathered = np.zeros((P, ITERS, P, SIZE), np.float32)
        pld.run(config, pipeline_program, w_in, x, w_out, s_out, z_out, gathered_out, host_w, host_s, host_gathered)

        # =======================================================================================
        # STEP 4: the golden, step by step on the host.
        # =======================================================================================
        w_want = np.zeros((P, ITERS, 1, SIZE), np.float32)
        s_want = np.zeros((P, ITERS, 1, SIZE), np.float32)
        gathered_want = np.zeros((P, ITERS, P, SIZE), np.float32)
        for it in range(ITERS):
            wv = w_in[root_of(it, P), it, 0]
            s = (wv * x[:, it, 0]).sum(axis=0)
            w_want[:, it, 0] = wv
            s_want[:, it, 0] = s
            gathered_want[:, it] = s * x[:, it, 0]
        if pld.is_output_rank():
            print(f"iteration 0, root {root_of(0, P)}, element 0: w = {w_out[0, 0, 0, 0]:g}, "
                  f"s = {s_out[0, 0, 0, 0]:g}, "
                  "gathered[*] = " + " ".join(f"{v:g}" for v in gathered_out[0, 0, :, 0]))

        check = tutorial.Checker()
        check.expect("w", w_out, w_want)
        check.expect("s", s_out, s_want)
        check.expect("gathered", gathered_out, gathered_want)
        check.expect("host_w", host_w, w_want)
        check.expect("host_s", host_s, s_want)
        check.expect("host_gathered", host_gathered, gathered_want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
