"""Step 07 — dynamic rank count: one source, any P.

Nothing in this program knows how many ranks there are until it runs: the world size comes
from `-d` (or from mpirun's -n), the host arrays and the windows are shaped from it, the kernel
loops to pld.nranks(ctx), and the golden is derived from the actual P. Change only `-d`.

The algorithm makes the rank count matter: a relay around the ring. Every rank starts with its
own slice in slot `me` of a [P, SIZE] window; in P-1 hops each rank forwards the slice it got
last to the next rank (put), so every slice travels all the way around:
  out[r] = [x[0]; x[1]; ...; x[P-1]]   for every rank r          (an all-gather, built by hand)

Concepts introduced:
  - world size from the config: array shapes (P, ...), window shapes (P, SIZE), the dispatch
    loop, the golden — no constant rank count anywhere
  - kernel loops bound by nranks(ctx); peers and slots by (me ± k) mod n
  - one signal cell used as a monotonic hop counter: hop k waits for >= k (Ge, not Eq: the
    previous rank may already be hops ahead)
  - the region form of put moving one row of a window to the same row of a peer's window

Run:  python3 07_dynamic_rank_count.py -d 0,1        python3 07_dynamic_rank_count.py -d 0,1,2,3,4,5,6,7
      mpirun -n 4 python3 07_dynamic_rank_count.py   (one rank per MPI process; no -d)
"""

import sys

import numpy as np

import pld
import tutorial

SIZE = 64  # floats per slice; the only fixed size in the program


# =============================================================================================
# STEP 1: the kernel. `gather` is this rank's [P, SIZE] window (row o will hold rank o's slice);
# `hops` is a one-cell signal window counting slices that arrived from the previous rank.
# =============================================================================================
def relay_kernel(x, out, gather, hops):
    ctx = pld.get_comm_ctx(gather)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)  # the rank count, at run time
    nxt = (me + 1) % n

    # My own slice goes into my row.
    pld.tile.store(pld.tile.load(x, (0, 0), (1, SIZE)), (me, 0), gather)

    # Hop k forwards the slice that originated k ranks before me. For k >= 1 it arrived from prev
    # at its hop k-1, so wait until prev has notified me k times.
    for k in range(n - 1):
        origin = (me - k) % n  # Python's % is never negative (C++ needs (me - k + n) % n)
        if k > 0:
            pld.system.wait(hops, (0, 0), k, pld.WaitCmp.Ge)
        pld.tensor.put(gather, nxt, gather, dst_offsets=(origin, 0), src_offsets=(origin, 0), shape=(1, SIZE))
        pld.system.notify(hops, nxt, (0, 0), 1, pld.NotifyOp.AtomicAdd)

    # The last of the n-1 slices I receive is the one I never forward; then every row is filled.
    pld.system.wait(hops, (0, 0), n - 1, pld.WaitCmp.Ge)
    pld.tile.store(pld.tile.load(gather, (0, 0), (n, SIZE)), (0, 0), out)


# =============================================================================================
# STEP 2: the host orchestrator: every shape that depends on the rank count says P.
# =============================================================================================
def relay_program(h, x, out):
    P = h.world_size()
    gather_buf = h.alloc_window_buffer((P, SIZE), np.float32, "gather")
    hops_buf = h.alloc_window_buffer((1, 1), np.int32, "hops")
    for r in range(P):
        h.dispatch(r, relay_kernel, x[r], out[r], h.window(gather_buf, (P, SIZE), np.float32),
                   h.window(hops_buf, (1, 1), np.int32))


def main():
    # ===========================================================================================
    # STEP 3: P comes from `-d`, and only from there.
    # ===========================================================================================
    config, _ = tutorial.parse_devices(
        "07_dynamic_rank_count", "Step 07: a ring relay whose shapes and hop count follow the rank count")
    P = config.world_size()

    def body():
        x = tutorial.random((P, 1, SIZE), seed=7)
        out = np.zeros((P, P, SIZE), np.float32)
        pld.run(config, relay_program, x, out)

        # =======================================================================================
        # STEP 4: the golden, from the actual P: every rank holds every slice, in rank order.
        # =======================================================================================
        want = np.broadcast_to(x.reshape(1, P, SIZE), (P, P, SIZE))
        if pld.is_output_rank():
            print(f"P = {P}: each rank made {P - 1} hops and now holds all {P} slices of {SIZE} floats")
        check = tutorial.Checker()
        check.expect("out", out, want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
