"""Step 04 — the hand-rolled barrier: signals only, no data.

A barrier is a rendezvous: nobody passes until everyone has arrived. Built from notify/wait:
every rank notifies every peer, then waits for every peer. Each rank owns row `me` of every
peer's [P, 1] signal window, so every cell has exactly one writer.

The program uses the barrier three times in one kernel to exchange two rounds of data around
the ring, then surfaces the signal window as proof that every peer arrived at every barrier:
  y1[r] = x1[(r+1) % P]        round 1, read after barrier 1
  y2[r] = x2[(r+1) % P]        round 2, staged after barrier 2, read after barrier 3
  tally[r][s] = 3 for s != r   (rank s arrived 3 times), 0 for s == r (nobody notifies itself);
                               0 everywhere with --use-builtin (the builtin leaves no trace)
  after[r][s] = 0              the self-clearing epilogue left the window ready for reuse

Concepts introduced:
  - pld.system.notify(signal, peer, (me, 0), 1, pld.NotifyOp.AtomicAdd) and
    pld.system.wait(signal, (s, 0), expected, pld.WaitCmp.Ge)
  - notify all, then wait all (the other order deadlocks)
  - reuse: the counters only grow, so barrier number g waits for >= g (a generation count)
  - why barrier 2 exists: a rank must not overwrite its window while a peer still reads it
  - the self-clearing epilogue (-g on your own cells) that pld's collectives use
  - pld.tile.read to look at single cells
  - the reveal (--use-builtin): pld.tensor.barrier(signal), the same rendezvous in one call,
    with the epilogue built in

Run:  python3 04_barrier.py -d 0,1      (any number of ranks)
      python3 04_barrier.py -d 0,1 --use-builtin
"""

import sys

import numpy as np

import pld
import tutorial

SIZE = 64


# =============================================================================================
# STEP 1: the barrier. Generation g (1, 2, 3, ...) of the barrier within one kernel call.
# =============================================================================================
def barrier(signal, generation):
    ctx = pld.get_comm_ctx(signal)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    # Arrive: +1 into row `me` of every peer's signal window. A release: everything this rank
    # wrote before is visible to a peer whose wait observes it.
    for peer in range(n):
        if peer != me:
            pld.system.notify(signal, peer, (me, 0), 1, pld.NotifyOp.AtomicAdd)
    # Wait until every peer has arrived `generation` times. Ge, not Eq: a fast peer may already
    # be one barrier ahead and have added its next +1.
    for src in range(n):
        if src != me:
            pld.system.wait(signal, (src, 0), generation, pld.WaitCmp.Ge)


# =============================================================================================
# STEP 1b (--use-builtin): the reveal. pld.tensor.barrier is the same rendezvous in one call:
# +1 to every peer, wait for every peer, then it gives its credit back itself (STEP 4's
# epilogue, per call). Every call therefore starts from zeroed cells, so there is no generation
# to pass — and nothing is left in the cells to look at afterwards.
# =============================================================================================
def rendezvous(signal, generation, use_builtin):
    if use_builtin:
        pld.tensor.barrier(signal)
    else:
        barrier(signal, generation)


# =============================================================================================
# STEP 2: the kernel: stage, barrier, read the neighbour; twice.
# =============================================================================================
def barrier_kernel(x1, x2, y1, y2, tally, after, data, signal, use_builtin):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    nxt = (me + 1) % n

    # Round 1: stage, barrier (everyone has staged), read the next rank's slice.
    pld.tile.store(pld.tile.load(x1, (0, 0), (1, SIZE)), (0, 0), data)
    rendezvous(signal, 1, use_builtin)
    pld.tile.store(pld.tile.remote_load(data, nxt, (0, 0), (1, SIZE)), (0, 0), y1)

    # Barrier 2 protects the other direction: my previous rank may still be reading my round-1
    # slice. Without it, my round-2 store below could overwrite the data under its feet.
    rendezvous(signal, 2, use_builtin)

    # Round 2: same exchange, new data, same window, same signal cells (generation 3).
    pld.tile.store(pld.tile.load(x2, (0, 0), (1, SIZE)), (0, 0), data)
    rendezvous(signal, 3, use_builtin)
    pld.tile.store(pld.tile.remote_load(data, nxt, (0, 0), (1, SIZE)), (0, 0), y2)

    # =========================================================================================
    # STEP 3: the observable. Every peer added exactly 3 to its row of my window and nobody adds
    # more, so after my last wait these cells hold exactly 3 (my own row: 0). With the builtin
    # they hold exactly 0: my third wait saw every peer's third credit, and the builtin gave it
    # back.
    # =========================================================================================
    for s in range(n):
        pld.tile.write(tally, (s,), pld.tile.read(signal, (s, 0)))

    # =========================================================================================
    # STEP 4: the self-clearing epilogue: each cell has one producer (+1 per barrier) and one
    # consumer (me). Subtracting the 3 credits I consumed leaves my cells at 0, so a later call
    # could start again at generation 1. AtomicAdd, never Set: a Set could wipe a credit in
    # flight.
    # =========================================================================================
    if not use_builtin:  # the builtin has already cleared its credits
        for s in range(n):
            if s != me:
                pld.system.notify(signal, me, (s, 0), -3, pld.NotifyOp.AtomicAdd)
    for s in range(n):
        pld.tile.write(after, (s,), pld.tile.read(signal, (s, 0)))


# =============================================================================================
# STEP 5: the host orchestrator: a data window and a [P, 1] signal window (one row per rank).
# pld.run hands numpy arrays to the orchestrator as shared host tensors and other values (here
# the flag) unchanged; a kernel gets the flag as a dispatch argument.
# =============================================================================================
def barrier_program(h, x1, x2, y1, y2, tally, after, use_builtin):
    P = h.world_size()
    data_buf = h.alloc_window_buffer((1, SIZE), np.float32, "data")
    signal_buf = h.alloc_window_buffer((P, 1), np.int32, "signal")
    for r in range(P):
        h.dispatch(r, barrier_kernel, x1[r], x2[r], y1[r], y2[r], tally[r], after[r],
                   h.window(data_buf, (1, SIZE), np.float32), h.window(signal_buf, (P, 1), np.int32), use_builtin)


def main():
    def options(parser):
        parser.add_argument("--use-builtin", action="store_true",
                            help="use the library's pld.tensor.barrier instead of the hand-rolled one")

    config, args = tutorial.parse_devices("04_barrier", "Step 04: a hand-rolled notify/wait barrier, used three times",
                                          options)
    P = config.world_size()
    use_builtin = args.use_builtin
    if pld.is_output_rank():
        print("barrier: " + ("pld.tensor.barrier (builtin)" if use_builtin else "hand-rolled notify/wait"))

    def body():
        x1 = tutorial.random((P, 1, SIZE), seed=41)
        x2 = tutorial.random((P, 1, SIZE), seed=42)
        y1 = np.zeros((P, 1, SIZE), np.float32)
        y2 = np.zeros((P, 1, SIZE), np.float32)
        tally = np.full((P, P), -1, np.int32)
        after = np.full((P, P), -1, np.int32)
        pld.run(config, barrier_program, x1, x2, y1, y2, tally, after, use_builtin)

        if pld.is_output_rank():
            for r in range(P):
                print(f"rank {r} signal column after 3 barriers: " + " ".join(str(v) for v in tally[r]))

        # =======================================================================================
        # STEP 6: the golden.
        # =======================================================================================
        tally_want = np.zeros((P, P), np.int32) if use_builtin else 3 * (1 - np.eye(P, dtype=np.int32))
        check = tutorial.Checker()
        check.expect("y1", y1, np.roll(x1, -1, axis=0))
        check.expect("y2", y2, np.roll(x2, -1, axis=0))
        check.expect("tally", tally, tally_want)
        check.expect("after", after, np.zeros((P, P), np.int32))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
