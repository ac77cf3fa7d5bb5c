"""Step 20 — a pipelined producer/consumer: serve whichever producer is ready first.

Rank 0 is the consumer; every other rank is a producer that streams CHUNKS chunks of its data
to rank 0. Each producer owns two slots in the consumer's inbox (double buffering) and one
"ready" counter cell; the consumer owns one "credit" counter cell on each producer.
  producer p, chunk k:  wait until chunk k-2 was consumed (credit >= k-1), put chunk k into
                        slot k % 2 of the consumer's inbox, notify ready[p] += 1
  consumer:             i = wait_until_any(ready, producer cells, next chunk of each), copy the
                        chunk out of its slot, give the producer its credit back; repeat until
                        every chunk of every producer is in
                                                       -> out[0][p][k] = x[p][k]
The order in which the consumer serves the producers is whatever order their chunks arrive
in: a slow producer never holds up a fast one (a loop of plain waits, producer by producer,
would). wait_until_any is fair: a producer whose cell stays ready does not starve the others.

Concepts introduced:
  - pld.system.wait_until_any(signal, cells, expected, cmp) -> the index of a ready cell,
    with one expected value per cell (each producer's next chunk number)
  - pld.system.wait_until_all, pld.system.test (never blocks), pld.system.signal_fetch
  - pld.tensor.put_signal_nbi and pld.system.quiet
  - double buffering with credits: a producer reuses a slot only after the consumer freed it

Run:  python3 20_pipeline.py -d 0,1,2,3      (any number of ranks; rank 0 consumes, the others produce)
"""

import sys

import numpy as np

import pld
import tutorial

CHUNKS = 8   # chunks per producer
CHUNK = 256  # floats per chunk
SLOTS = 2    # inbox slots per producer (double buffering)
NEVER = np.iinfo(np.int32).max  # an expected value no producer's counter reaches


# =============================================================================================
# STEP 1: the producer — stream CHUNKS chunks into my two slots of rank 0's inbox.
# =============================================================================================
def produce(me, x, inbox, ready, credit):
    for k in range(CHUNKS):
        # Slot k % 2 held chunk k - 2: wait until the consumer has copied it out. test() first:
        # it never blocks, so a producer that has other work could do it here instead of waiting.
        if k >= SLOTS and not pld.system.test(credit, (0,), k - SLOTS + 1, pld.WaitCmp.Ge):
            pld.system.wait(credit, (0,), k - SLOTS + 1, pld.WaitCmp.Ge)
        slot_row = me * SLOTS + k % SLOTS
        # The chunk and its signal in one call that may return before the chunk lands: the
        # consumer that sees ready[me] rise sees the chunk. x stays unchanged until quiet(), so
        # nothing else is needed before the next chunk.
        pld.tensor.put_signal_nbi(inbox, 0, x, (slot_row, 0), (k, 0), (1, CHUNK), ready, (me,), 1,
                                  pld.NotifyOp.AtomicAdd)
    pld.system.quiet()  # every chunk delivered before the kernel's source may change


# =============================================================================================
# STEP 2: the consumer — serve whichever producer is ready first.
# =============================================================================================
def consume(n, out, inbox, ready, credit):
    if n < 2:
        return  # nobody produces
    # One ready cell per producer; cell i belongs to producer i + 1 and waits for its next chunk.
    cells = [(p,) for p in range(1, n)]
    nxt = [1] * len(cells)  # chunk k of a producer is ready when ready >= k + 1
    for _ in range((n - 1) * CHUNKS):
        i = pld.system.wait_until_any(ready, cells, nxt, pld.WaitCmp.Ge)
        p = i + 1
        k = nxt[i] - 1
        # Copy the chunk out of its slot, then free the slot: the producer may overwrite it now.
        chunk = pld.tile.load(inbox, (p * SLOTS + k % SLOTS, 0), (1, CHUNK))
        pld.tile.store(chunk, (p * CHUNKS + k, 0), out)
        pld.system.notify(credit, p, (0,), 1, pld.NotifyOp.AtomicAdd)
        # A producer that has sent everything is never ready again (no chunk CHUNKS + 1 comes).
        nxt[i] = nxt[i] + 1 if k + 1 < CHUNKS else NEVER
    # Every producer's counter is at CHUNKS now: wait_until_all returns at once, signal_fetch
    # reads one.
    pld.system.wait_until_all(ready, cells, CHUNKS, pld.WaitCmp.Eq)
    print(f"rank 0: served {(n - 1) * CHUNKS} chunks; the last producer's counter reads "
          f"{pld.system.signal_fetch(ready, (n - 1,))}")


def pipeline_kernel(x, out, inbox, ready, credit):
    ctx = pld.get_comm_ctx(ready)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    if me == 0:
        consume(n, out, inbox, ready, credit)
    else:
        produce(me, x, inbox, ready, credit)


# =============================================================================================
# STEP 3: the host orchestrator.
# =============================================================================================
def pipeline_program(h, x, out):
    n = h.world_size()
    inbox = h.alloc_window_buffer((n * SLOTS, CHUNK), np.float32, "inbox")
    ready = h.alloc_window_buffer((n,), np.int32, "ready")
    credit = h.alloc_window_buffer((1,), np.int32, "credit")
    for r in range(n):
        h.dispatch(r, pipeline_kernel, x[r], out[r], h.window(inbox, (n * SLOTS, CHUNK), np.float32),
                   h.window(ready, (n,), np.int32), h.window(credit, (1,), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "20_pipeline", "Step 20: producers stream chunks; the consumer serves whichever is ready first")
    P = config.world_size()

    def body():
        x = tutorial.small_integers((P, CHUNKS, CHUNK), seed=20)
        out = np.zeros((P, P * CHUNKS, CHUNK), np.float32)
        pld.run(config, pipeline_program, x, out)

        # =======================================================================================
        # STEP 4: the golden — rank 0 holds every producer's chunks in order, nothing else changed.
        # =======================================================================================
        want = np.zeros((P, P * CHUNKS, CHUNK), np.float32)
        want[0, CHUNKS:] = x[1:].reshape((P - 1) * CHUNKS, CHUNK)
        check = tutorial.Checker()
        check.expect("out", out, want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
