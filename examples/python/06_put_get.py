"""Step 06 — put / get: tensor-level one-sided transfers, push vs pull.

put and get move a whole tensor (or a box of one) between ranks in one call; the runtime does
the staging, and large transfers can be cut into chunks. The difference is who initiates:
  A put (push): the sender copies its rank-local x straight into the next rank's window,
                notifies it; the receiver waits, reads its own window
                                                       -> put_out[r] = x[(r-1+P) % P]
  B get (pull): every rank publishes x in its window and tells the rank that reads it; the
                receiver waits, then gets the next rank's slice straight into its output
                                                       -> get_out[r] = x[(r+1) % P]
  C a region put, chunked and pipelined: a [16, 32] box of a [32, 48] block lands at offset
    (8, 16) of the next rank's window, 8 x 16 elements at a time; the rest stays zero
                                                       -> box_out[r] = that window

Concepts introduced:
  - pld.tensor.put(dst_window, peer, src) / pld.tensor.get(dst, peer, src_window)
  - the source of a put may be rank-local; the source of a get must be a window (a peer reads it)
  - the region form (dst_offsets=, src_offsets=, shape=) and the keyword options chunk_rows=,
    chunk_cols=, pipeline=
  - put is synchronous for the sender only: the receiver still needs notify / wait

Run:  python3 06_put_get.py -d 0,1      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial

SIZE = 64                     # parts A and B: [1, SIZE] per rank
ROWS, COLS = 32, 48           # part C: a [ROWS, COLS] block per rank
BOX_R, BOX_C = 8, 16          # where the box lands in the receiver's window
BOX_ROWS, BOX_COLS = 16, 32   # the box's shape (taken from the block's origin)

# Cells of the [3, 1] signal window: one per part.
PUT, GET, BOX = 0, 1, 2


# =============================================================================================
# STEP 1: the kernel.
# =============================================================================================
def put_get_kernel(x, block, put_out, get_out, box_out, put_dst, get_src, box_dst, signal):
    ctx = pld.get_comm_ctx(signal)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    nxt, prev = (me + 1) % n, (me + n - 1) % n

    # --- STEP 1a, part A: put (push) -----------------------------------------------------------
    # The sender initiates. The source may be any rank-local array: no staging needed. put
    # returns when the data is in the peer's window; the notify after it tells the peer so.
    pld.tensor.put(put_dst, nxt, x)
    pld.system.notify(signal, nxt, (PUT, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (PUT, 0), 1, pld.WaitCmp.Ge)  # prev has put into MY window
    pld.tile.store(pld.tile.load(put_dst, (0, 0), (1, SIZE)), (0, 0), put_out)

    # --- STEP 1b, part B: get (pull) -----------------------------------------------------------
    # The receiver initiates, so the source must be published first: stage x in my window, then
    # notify the rank that reads me (prev). My wait is satisfied by exactly the rank I read (next).
    pld.tile.store(pld.tile.load(x, (0, 0), (1, SIZE)), (0, 0), get_src)
    pld.system.notify(signal, prev, (GET, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (GET, 0), 1, pld.WaitCmp.Ge)
    pld.tensor.get(get_out, nxt, get_src)  # straight into my rank-local output

    # --- STEP 1c, part C: a region put, chunked and pipelined ----------------------------------
    # Move the [BOX_ROWS, BOX_COLS] box at (0, 0) of my block to (BOX_R, BOX_C) of the next
    # rank's window, in 8 x 16 chunks with consecutive chunks overlapped (pipeline needs both
    # chunk sizes).
    pld.tensor.put(box_dst, nxt, block, dst_offsets=(BOX_R, BOX_C), src_offsets=(0, 0), shape=(BOX_ROWS, BOX_COLS),
                   chunk_rows=8, chunk_cols=16, pipeline=True)
    pld.system.notify(signal, nxt, (BOX, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (BOX, 0), 1, pld.WaitCmp.Ge)
    pld.tile.store(pld.tile.load(box_dst, (0, 0), (ROWS, COLS)), (0, 0), box_out)


# =============================================================================================
# STEP 2: the host orchestrator.
# =============================================================================================
def put_get_program(h, x, block, put_out, get_out, box_out):
    put_buf = h.alloc_window_buffer((1, SIZE), np.float32, "put_dst")
    get_buf = h.alloc_window_buffer((1, SIZE), np.float32, "get_src")
    box_buf = h.alloc_window_buffer((ROWS, COLS), np.float32, "box_dst")
    signal_buf = h.alloc_window_buffer((3, 1), np.int32, "signal")
    for r in range(h.world_size()):
        h.dispatch(r, put_get_kernel, x[r], block[r], put_out[r], get_out[r], box_out[r],
                   h.window(put_buf, (1, SIZE), np.float32), h.window(get_buf, (1, SIZE), np.float32),
                   h.window(box_buf, (ROWS, COLS), np.float32), h.window(signal_buf, (3, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices("06_put_get",
                                       "Step 06: put (push) and get (pull), full slices and a chunked region")
    P = config.world_size()

    def body():
        x = tutorial.random((P, 1, SIZE), seed=6)
        block = tutorial.random((P, ROWS, COLS), seed=66)
        put_out = np.zeros((P, 1, SIZE), np.float32)
        get_out = np.zeros((P, 1, SIZE), np.float32)
        box_out = np.zeros((P, ROWS, COLS), np.float32)
        pld.run(config, put_get_program, x, block, put_out, get_out, box_out)
        if pld.is_output_rank():
            print(f"rank 0: put_out[0][0][0] = {put_out[0, 0, 0]:g} (x[{P - 1}]), get_out[0][0][0] = "
                  f"{get_out[0, 0, 0]:g} (x[{1 % P}]), box_out[0][{BOX_R}][{BOX_C}] = {box_out[0, BOX_R, BOX_C]:g}")

        # =======================================================================================
        # STEP 3: the golden.
        # =======================================================================================
        box_want = np.zeros((P, ROWS, COLS), np.float32)
        box_want[:, BOX_R:BOX_R + BOX_ROWS, BOX_C:BOX_C + BOX_COLS] = np.roll(block, 1, axis=0)[:, :BOX_ROWS, :BOX_COLS]
        check = tutorial.Checker()
        check.expect("put_out", put_out, np.roll(x, 1, axis=0))
        check.expect("get_out", get_out, np.roll(x, -1, axis=0))
        check.expect("box_out", box_out, box_want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
