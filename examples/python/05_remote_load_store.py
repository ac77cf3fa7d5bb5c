"""Step 05 — remote_load / remote_store: tile-level RMA, both sides of a ring shift, and a combine.

A window is symmetric, so any rank's copy is reachable: remote_load pulls a peer's box into a
local tile, remote_store pushes a local tile into a peer's box. Three parts, one kernel:
  A pull:    stage x, tell the rank that reads me, wait for the rank I read, remote_load it
                                                                 -> pulled[r] = x[(r+1) % P]
  B push:    remote_store x into the next rank's window, notify it, wait, read my own copy
                                                                 -> pushed[r] = x[(r-1+P) % P]
  C combine: every rank remote_stores v with AtomicType.Add into every rank's window and
             bumps one shared counter cell; wait for all P arrivals
                                                                 -> summed[r] = sum over s of v[s]

Concepts introduced:
  - pld.tile.remote_load(window, peer, offsets, shape) / pld.tile.remote_store(tile, window,
    peer, offsets[, atomic=pld.AtomicType.Add]) and the tensor form pld.tensor.remote_store
  - pull ordering: the source stages and signals BEFORE the reader loads
  - push ordering: the writer stores BEFORE it signals; the receiver waits before reading
  - point-to-point signalling: only the one rank you depend on needs to tell you
  - many writers, one cell: NotifyOp.AtomicAdd + WaitCmp.Ge P (a Set would lose arrivals)

Run:  python3 05_remote_load_store.py -d 0,1      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial

SIZE = 64

# Cells of the [3, 1] signal window: one per part.
PULL, PUSH, COMBINE = 0, 1, 2


# =============================================================================================
# STEP 1: the kernel. Plain arrays are rank-local; only the windows can be reached by a peer.
# Each part has its own data window, so the parts cannot disturb each other.
# =============================================================================================
def rma_kernel(x, v, pulled, pushed, summed, pull_win, push_win, sum_win, signal):
    ctx = pld.get_comm_ctx(signal)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    nxt, prev = (me + 1) % n, (me + n - 1) % n
    mine = pld.tile.load(x, (0, 0), (1, SIZE))

    # --- STEP 1a, part A: pull with remote_load ------------------------------------------------
    # remote_load reads WINDOW memory, so my slice must be in my window first. Then I signal the
    # rank that will read me (prev) and wait for the rank I read (next) to signal me.
    pld.tile.store(mine, (0, 0), pull_win)
    pld.system.notify(signal, prev, (PULL, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (PULL, 0), 1, pld.WaitCmp.Ge)
    pld.tile.store(pld.tile.remote_load(pull_win, nxt, (0, 0), (1, SIZE)), (0, 0), pulled)

    # --- STEP 1b, part B: push with remote_store -----------------------------------------------
    # The mirror: write into the next rank's window first, then notify it (the notify releases
    # the store). My own copy is written by prev; I may read it once prev's notify has arrived.
    pld.tile.remote_store(mine, push_win, nxt, (0, 0))
    pld.system.notify(signal, nxt, (PUSH, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (PUSH, 0), 1, pld.WaitCmp.Ge)
    pld.tile.store(pld.tile.load(push_win, (0, 0), (1, SIZE)), (0, 0), pushed)

    # --- STEP 1c, part C: combine with AtomicType.Add ------------------------------------------
    # Every rank adds its v into every rank's sum window (itself included), straight from the
    # rank-local array (the tensor form of remote_store), then adds 1 to that rank's COMBINE
    # cell. P writers share one cell: AtomicAdd accumulates the arrivals and Ge P waits for all.
    for peer in range(n):
        pld.tensor.remote_store(v, sum_win, peer, (0, 0), pld.AtomicType.Add)
        pld.system.notify(signal, peer, (COMBINE, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (COMBINE, 0), n, pld.WaitCmp.Ge)
    pld.tile.store(pld.tile.load(sum_win, (0, 0), (1, SIZE)), (0, 0), summed)


# =============================================================================================
# STEP 2: the host orchestrator: three data windows and one signal window with a cell per part.
# =============================================================================================
def rma_program(h, x, v, pulled, pushed, summed):
    pull_buf = h.alloc_window_buffer((1, SIZE), np.float32, "pull")
    push_buf = h.alloc_window_buffer((1, SIZE), np.float32, "push")
    sum_buf = h.alloc_window_buffer((1, SIZE), np.float32, "sum")
    signal_buf = h.alloc_window_buffer((3, 1), np.int32, "signal")
    for r in range(h.world_size()):
        h.dispatch(r, rma_kernel, x[r], v[r], pulled[r], pushed[r], summed[r],
                   h.window(pull_buf, (1, SIZE), np.float32), h.window(push_buf, (1, SIZE), np.float32),
                   h.window(sum_buf, (1, SIZE), np.float32), h.window(signal_buf, (3, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "05_remote_load_store", "Step 05: remote_load (pull), remote_store (push) and an atomic combine")
    P = config.world_size()

    def body():
        # v holds small whole numbers, so the atomic sum is exact in any arrival order.
        x = tutorial.random((P, 1, SIZE), seed=5)
        v = np.arange(P * SIZE, dtype=np.float32).reshape(P, 1, SIZE)
        pulled = np.zeros((P, 1, SIZE), np.float32)
        pushed = np.zeros((P, 1, SIZE), np.float32)
        summed = np.zeros((P, 1, SIZE), np.float32)
        pld.run(config, rma_program, x, v, pulled, pushed, summed)
        if pld.is_output_rank():
            print(f"rank 0: pulled[0][0][0] = {pulled[0, 0, 0]:g} (x[{1 % P}]), pushed[0][0][0] = "
                  f"{pushed[0, 0, 0]:g} (x[{P - 1}]), summed[0][0][0..2] = "
                  + " ".join(f"{s:g}" for s in summed[0, 0, :3]))

        # =======================================================================================
        # STEP 3: the golden.
        # =======================================================================================
        check = tutorial.Checker()
        check.expect("pulled", pulled, np.roll(x, -1, axis=0))
        check.expect("pushed", pushed, np.roll(x, 1, axis=0))
        check.expect("summed", summed, np.broadcast_to(v.sum(axis=0), v.shape))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
