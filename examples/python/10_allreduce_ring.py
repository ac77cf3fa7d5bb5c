"""Step 10 — all-reduce v3, the ring: chunks travel around the ring, one neighbour at a time.

Cut the vector into P chunks. Every rank only ever talks to its two neighbours: it reads from
its left neighbour and is read by its right one. 2(P-1) steps, in place on a window:
  reduce-scatter, step s = 0 .. P-2: my chunk (me-s-1) += left's chunk (me-s-1)
      after P-1 steps, my chunk (me+1) holds the sum over all ranks
  all-gather,     step s = 0 .. P-2: my chunk (me-s)    = left's chunk (me-s)   (a final sum)
      after P-1 more steps, every chunk of every copy holds its sum
Each rank reads 2(P-1) chunks of SIZE/P, under 2 x SIZE at any P (the mesh reads P x SIZE).

No barrier at all — two neighbour signals instead, in a [2, 1] window:
  STEP  written by my left neighbour: "I have finished step t-1" (t = 0: "I have staged").
        Before step t, I wait for STEP >= t+1: the chunk I read is final.
  DONE  written by my right neighbour: "I have finished reading you". Before I return (and
        perhaps restage my copy), I wait for it.
Why nobody needs a "you may overwrite" signal inside the call: my wait for left's step t-1
implies left waited for ITS left's step t-2, and so on around the ring; P-1 ranks back is my
right neighbour, which has therefore finished step t-(P-1). The chunk I overwrite at all-gather
step s (t = P-1+s) is the one it read at its step s. The dependency chain closes the ring.

  out[r][k] = sum over s of x[s][k]
  lib[r][k] = the same through pld.tensor.allreduce with mode=AllreduceMode.Ring

Concepts introduced:
  - the ring schedule: 2(P-1) neighbour steps, bandwidth-optimal, latency grows with P
  - chunk c taken modulo P (Python's % already gives a value in [0, P))
  - point-to-point signalling: a counter per neighbour instead of a P-rank barrier
  - proving a protocol safe: read-after-write per step, write-after-read from the chain
  - self-clearing with counters: subtract what you consumed (-2(P-1) and -1) at the end

Run:  python3 10_allreduce_ring.py -d 0,1,2,3      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial

SIZE = 256
ROUNDS = 2

# The cells of the ring's [2, 1] signal window; each has exactly one writer.
STEP = 0  # written by my left neighbour
DONE = 1  # written by my right neighbour


# =============================================================================================
# STEP 1: chunk c of the vector, for any integer c (taken modulo n): (begin, length).
# =============================================================================================
def chunk(c, n):
    c %= n
    begin, end = SIZE * c // n, SIZE * (c + 1) // n
    return begin, end - begin


# =============================================================================================
# STEP 2: the ring all-reduce, in place.
# =============================================================================================
def allreduce_ring(data, signal):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    if n == 1:
        return  # a ring of one: my copy already is the sum
    left, right = (me - 1) % n, (me + 1) % n
    steps = 2 * (n - 1)

    # My input is staged (the caller did it): right may run its step 0, which reads me.
    pld.system.notify(signal, right, (STEP, 0), 1, pld.NotifyOp.AtomicAdd)

    for t in range(steps):
        pld.system.wait(signal, (STEP, 0), t + 1, pld.WaitCmp.Ge)  # left finished step t-1
        if t < n - 1:
            # Reduce-scatter step t: fold left's partial sum of chunk (me-t-1) into mine.
            begin, length = chunk(me - t - 1, n)
            theirs = pld.tile.remote_load(data, left, (0, begin), (1, length))
            ours = pld.tile.load(data, (0, begin), (1, length))
            pld.tile.store(theirs + ours, (0, begin), data)
        else:
            # All-gather step s = t-(P-1): copy left's finished chunk (me-s) over mine.
            begin, length = chunk(me - (t - (n - 1)), n)
            pld.tile.store(pld.tile.remote_load(data, left, (0, begin), (1, length)), (0, begin), data)
        # My step t is done (a release: the store above is visible to right's wait). Right has no
        # step after the last one, so the last step needs no signal.
        if t + 1 < steps:
            pld.system.notify(signal, right, (STEP, 0), 1, pld.NotifyOp.AtomicAdd)

    # I will not read left again; wait until right will not read me again.
    pld.system.notify(signal, left, (DONE, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.wait(signal, (DONE, 0), 1, pld.WaitCmp.Ge)

    # Self-clearing: left sent exactly `steps` STEP credits (all seen: the last wait was >= steps),
    # right exactly one DONE credit. Give them back; the next call starts from zero. A
    # neighbour's first credit of the next call may already be there — AtomicAdd keeps it.
    pld.system.notify(signal, me, (STEP, 0), -steps, pld.NotifyOp.AtomicAdd)
    pld.system.notify(signal, me, (DONE, 0), -1, pld.NotifyOp.AtomicAdd)


# =============================================================================================
# STEP 3: the kernel: ROUNDS ring all-reduces on one signal, then the same through pld.
# =============================================================================================
def ring_kernel(x, out, lib_out, after, data, signal, lib, lib_signal):
    for k in range(ROUNDS):
        tile = pld.tile.load(x, (k, 0), (1, SIZE))

        pld.tile.store(tile, (0, 0), data)  # safe: the DONE handshake ended the previous round
        allreduce_ring(data, signal)
        pld.tile.store(pld.tile.load(data, (0, 0), (1, SIZE)), (k, 0), out)

        # pld's ring. Its signal is the same [P, 1] shape as every other collective's: pld runs
        # each ring step behind its P-rank credit barrier rather than neighbour counters.
        pld.tile.store(tile, (0, 0), lib)
        pld.tensor.allreduce(lib, lib_signal, mode=pld.AllreduceMode.Ring)
        pld.tile.store(pld.tile.load(lib, (0, 0), (1, SIZE)), (k, 0), lib_out)
    pld.tile.write(after, (STEP,), pld.tile.read(signal, (STEP, 0)))
    pld.tile.write(after, (DONE,), pld.tile.read(signal, (DONE, 0)))


# =============================================================================================
# STEP 4: the host orchestrator: the hand-rolled ring needs only a [2, 1] signal at any P.
# =============================================================================================
def ring_program(h, x, out, lib_out, after):
    P = h.world_size()
    data_buf = h.alloc_window_buffer((1, SIZE), np.float32, "data")
    signal_buf = h.alloc_window_buffer((2, 1), np.int32, "ring_signal")
    lib_buf = h.alloc_window_buffer((1, SIZE), np.float32, "lib_data")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, ring_kernel, x[r], out[r], lib_out[r], after[r], h.window(data_buf, (1, SIZE), np.float32),
                   h.window(signal_buf, (2, 1), np.int32), h.window(lib_buf, (1, SIZE), np.float32),
                   h.window(lib_signal_buf, (P, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "10_allreduce_ring", "Step 10: all-reduce around the ring with neighbour signals, and pld's ring")
    P = config.world_size()

    def body():
        x = tutorial.small_integers((P, ROUNDS, SIZE), seed=10)
        out = np.zeros((P, ROUNDS, SIZE), np.float32)
        lib_out = np.zeros((P, ROUNDS, SIZE), np.float32)
        after = np.full((P, 2), -1, np.int32)
        pld.run(config, ring_program, x, out, lib_out, after)

        steps = 2 * (P - 1)
        read = sum(chunk(-t - 1 if t < P - 1 else -(t - (P - 1)), P)[1] for t in range(steps))
        if pld.is_output_rank():
            print(f"P = {P}: {steps} steps; rank 0 read {read} floats from its left neighbour "
                  f"(the mesh reads {P * SIZE})")

        # =======================================================================================
        # STEP 5: the golden.
        # =======================================================================================
        want = np.broadcast_to(x.sum(axis=0), x.shape)
        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        check.expect("after", after, np.zeros((P, 2), np.int32))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
