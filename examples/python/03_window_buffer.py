"""Step 03 — window buffers: the memory every later step communicates through.

A window buffer is symmetric: the host allocates it once and every rank gets its own copy at the
same offset of its window, zero-filled. A rank reads and writes its own copy like a local array,
and reaches a peer's copy by naming the peer. This step does both:
  part A: write your own slice, read it back                      -> y[r]     = x[r]
          (and look at it before writing: windows start zeroed)   -> fresh[r] = 0
  part B: a first cross-rank read, made safe by one signal: rank r produces its slice for rank
          r+1, which waits for the producer's notify and then remote_loads it
                                                                  -> z[r]     = x[(r-1+P) % P]

Concepts introduced:
  - h.alloc_window_buffer(nbytes, name) and h.alloc_window_buffer(shape, dtype, name),
    h.window(buf, shape, dtype)
  - a window view: the only kind of memory a peer can reach
  - pld.tile.load / pld.tile.store on your own copy of a window
  - producer/consumer: the producer writes, then pld.system.notify(consumer); the consumer
    pld.system.wait(s), then reads — pld.tile.remote_load(window, peer, offsets, shape)

Run:  python3 03_window_buffer.py -d 0,1      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial

SIZE = 256  # floats per rank: 1 KiB of window


# =============================================================================================
# STEP 1: the kernel. `data` is this rank's view of the [1, SIZE] float window; `ready` is a
# one-cell int32 signal window. Plain arrays (x, y, fresh, z) are rank-local: no peer sees them.
# =============================================================================================
def window_kernel(x, y, fresh, z, data, ready):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    consumer = (me + 1) % n      # who reads my slice
    producer = (me + n - 1) % n  # whose slice I read

    # --- part A: my own copy of the window -------------------------------------------------
    # STEP 1a: a fresh window is zero-filled. Nobody writes into my copy in this program (peers
    # only read it), so this is what any rank sees before its first store.
    pld.tile.store(pld.tile.load(data, (0, 0), (1, SIZE)), (0, 0), fresh)

    # STEP 1b: stage my slice into my window, read it back.
    pld.tile.store(pld.tile.load(x, (0, 0), (1, SIZE)), (0, 0), data)
    pld.tile.store(pld.tile.load(data, (0, 0), (1, SIZE)), (0, 0), y)

    # --- part B: producer / consumer --------------------------------------------------------
    # STEP 1c (producer): my slice is in my window; tell the consumer. notify is a release: the
    # store above is visible to whoever observes this notify. I am the only writer of the
    # consumer's `ready` cell, so Set is enough (step 04 shows when it is not).
    pld.system.notify(ready, consumer, (0, 0), 1, pld.NotifyOp.Set)

    # STEP 1d (consumer): wait until my producer has said "ready" (an acquire), then pull its
    # slice from its copy of the window. Without the wait, the load could see zeros or half a slice.
    pld.system.wait(ready, (0, 0), 1, pld.WaitCmp.Eq)
    got = pld.tile.remote_load(data, producer, (0, 0), (1, SIZE))
    pld.tile.store(got, (0, 0), z)


# =============================================================================================
# STEP 2: the host orchestrator owns the windows: allocate once, before the dispatch loop, then
# hand every rank a view. Both forms: bytes, or shape + dtype.
# =============================================================================================
def window_program(h, x, y, fresh, z):
    data_buf = h.alloc_window_buffer(SIZE * 4, "data")                     # size in BYTES
    ready_buf = h.alloc_window_buffer((1, 1), pld.DType.INT32, "ready")  # shape + dtype
    for r in range(h.world_size()):
        h.dispatch(r, window_kernel, x[r], y[r], fresh[r], z[r], h.window(data_buf, (1, SIZE), np.float32),
                   h.window(ready_buf, (1, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "03_window_buffer", "Step 03: window buffers: own slice round trip, then a signalled remote_load")
    P = config.world_size()

    def body():
        # =======================================================================================
        # STEP 3: run.
        # =======================================================================================
        x = tutorial.random((P, 1, SIZE), seed=3)
        y = np.zeros((P, 1, SIZE), np.float32)
        fresh = np.full((P, 1, SIZE), -1.0, np.float32)  # the kernel must overwrite it
        z = np.zeros((P, 1, SIZE), np.float32)
        pld.run(config, window_program, x, y, fresh, z)
        if pld.is_output_rank():
            for r in range(P):
                p = (r - 1 + P) % P
                print(f"rank {r} remote_loaded rank {p}'s slice: z[{r}][0][0] = {z[r, 0, 0]:g} "
                      f"(x[{p}][0][0] = {x[p, 0, 0]:g})")

        # =======================================================================================
        # STEP 4: the golden: y[r] = x[r], fresh[r] = 0, z[r] = x[(r-1+P) % P].
        # =======================================================================================
        check = tutorial.Checker()
        check.expect("y", y, x)
        check.expect("fresh", fresh, np.zeros((P, 1, SIZE), np.float32))
        check.expect("z", z, np.roll(x, 1, axis=0))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
