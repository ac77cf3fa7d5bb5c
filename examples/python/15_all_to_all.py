"""Step 15 — all-to-all: a personalised exchange, every rank to every rank.

Every rank holds P rows, row d addressed to rank d. Afterwards row s of rank r's result is the
row rank s addressed to rank r:  result[r][s] = input[s][r]  — a distributed transpose of the
P x P grid of rows. Unlike the all-gather, every rank receives something different.
By hand, as a push with pld.tensor.put (step 06's region form), between two barriers:
  barrier (every target is free: nobody still reads the previous call's result)
  -> put my row d into row `me` of rank d's target, for every d (myself included)
  -> barrier (every row has landed)
The source rows never leave rank-local memory: a put reads the sender's memory, so only
the receiving side (the target) has to be a window. Each target row has exactly one writer.
Two rounds on one signal, three paths:
  out[r][k][s]  = x[s][k][r]     hand-rolled push
  lib[r][k][s]  = the same       pld.tensor.all_to_all(input, target, signal)
  host[r][k][s] = the same       h.all_to_all(input_window, target)
Part B, the variable form (all_to_all_v): rank s sends count[s][d] <= MAX_RECV rows to rank d,
from block d of its [P * MAX_RECV, SIZE] input into block s of d's target, and tells d how
many in recv_counts[s] — the count travels in a cell, with notify(..., NotifyOp.Set):
  vout[r] rows [s * MAX_RECV, + count[s][r]) = xv[s] block r; the rest of each block stays 0
  vcounts[r][s] = count[s][r];   lib_v / lib_vcounts: the same via pld.tensor.all_to_all_v

Concepts introduced:
  - all-to-all semantics: P x P blocks, block (s -> r) lands in row s of rank r
  - the region put: dst_offsets=(me, 0), src_offsets=(d, 0), shape=(1, SIZE)
  - the first barrier guards the target across calls (write-after-read), the second
    publishes it (read-after-write)
  - pld.tensor.all_to_all and h.all_to_all (input and target: different buffers)
  - all_to_all_v: a value (the row count) carried by notify Set, published by the barrier

Run:  python3 15_all_to_all.py -d 0,1,2      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from credit_barrier import CreditBarrier  # STEP 1: step 08's self-clearing credit barrier
from tutorial import collect, stage

SIZE = 64     # floats per row; each rank holds P rows
ROUNDS = 2
MAX_RECV = 3  # part B: at most 3 rows from one rank to another


def count_of(s, d):
    """Part B: how many rows rank s sends to rank d (0 .. MAX_RECV; 0 happens too)."""
    return (s + 2 * d) % (MAX_RECV + 1)


# =============================================================================================
# STEP 2: the hand-rolled push all-to-all. `inp` is rank-local [P, SIZE]; `target` a window.
# =============================================================================================
def all_to_all_push(inp, target, signal):
    ctx = pld.get_comm_ctx(target)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    barrier = CreditBarrier(signal)

    barrier.sync()  # 1: every rank is done with its previous result — targets are free
    for k in range(n):
        d = (me + k) % n  # staggered: not everyone writes to rank 0 first
        pld.tensor.put(target, d, inp, dst_offsets=(me, 0), src_offsets=(d, 0), shape=(1, SIZE))
    barrier.sync()  # 2: every rank's puts have landed (each notify released its sender's puts)
    barrier.finish()


# =============================================================================================
# STEP 3 (part B): the variable form. Block d of `inp` ([P * MAX_RECV, SIZE]) holds up to
# MAX_RECV rows for rank d; send_counts[d] says how many. The count goes into cell [me, 0] of
# d's recv_counts window with a Set — a value, not a credit: one writer per cell, written once
# per call, and published by the barrier's notify like any other write before it.
# =============================================================================================
def all_to_all_v_push(inp, send_counts, target, recv_counts, signal):
    ctx = pld.get_comm_ctx(target)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    barrier = CreditBarrier(signal)

    barrier.sync()
    for k in range(n):
        d = (me + k) % n
        rows = int(pld.tile.read(send_counts, (d,)))
        pld.tensor.put(target, d, inp, dst_offsets=(me * MAX_RECV, 0), src_offsets=(d * MAX_RECV, 0),
                       shape=(rows, SIZE))  # 0 rows: a no-op
        pld.system.notify(recv_counts, d, (me, 0), rows, pld.NotifyOp.Set)
    barrier.sync()  # the rows AND the counts have landed
    barrier.finish()


# =============================================================================================
# STEP 4: the kernels: both rounds by hand, each followed by pld's composite; then part B, a
# second dispatch on the same two signals (both are clean again after every call).
# =============================================================================================
def all_to_all_kernel(x, out, lib_out, target, signal, lib, lib_signal):
    me = pld.rank(pld.get_comm_ctx(target))
    for k in range(ROUNDS):
        all_to_all_push(x[k], target, signal)
        pld.tensor.get(out[k], me, target)

        pld.tensor.all_to_all(x[k], lib, lib_signal)
        pld.tensor.get(lib_out[k], me, lib)


def all_to_all_v_kernel(xv, send_counts, vout, vcounts, lib_vout, lib_vcounts, vtarget, recv_counts, signal,
                        lib_vtarget, lib_recv_counts, lib_signal):
    ctx = pld.get_comm_ctx(vtarget)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    all_to_all_v_push(xv, send_counts, vtarget, recv_counts, signal)
    pld.tensor.get(vout, me, vtarget)
    for s in range(n):
        pld.tile.write(vcounts, (s,), pld.tile.read(recv_counts, (s, 0)))

    pld.tensor.all_to_all_v(xv, lib_vtarget, lib_signal, send_counts, lib_recv_counts)
    pld.tensor.get(lib_vout, me, lib_vtarget)
    for s in range(n):
        pld.tile.write(lib_vcounts, (s,), pld.tile.read(lib_recv_counts, (s, 0)))


# =============================================================================================
# STEP 5: the host orchestrator. The builtin takes the input as a window too (stage and collect
# are in tutorial.py).
# =============================================================================================
def all_to_all_program(h, x, out, lib_out, host_out, xv, send_counts, vout, vcounts, lib_vout, lib_vcounts):
    P = h.world_size()

    def window(shape, dtype, name):
        return h.window(h.alloc_window_buffer(shape, dtype, name), shape, dtype)

    target, lib = window((P, SIZE), np.float32, "target"), window((P, SIZE), np.float32, "lib_target")
    signal, lib_signal = window((P, 1), np.int32, "signal"), window((P, 1), np.int32, "lib_signal")
    vtarget = window((P * MAX_RECV, SIZE), np.float32, "vtarget")
    lib_vtarget = window((P * MAX_RECV, SIZE), np.float32, "lib_vtarget")
    recv_counts = window((P, 1), np.int32, "recv_counts")
    lib_recv_counts = window((P, 1), np.int32, "lib_recv_counts")
    for r in range(P):
        h.dispatch(r, all_to_all_kernel, x[r], out[r], lib_out[r], target, signal, lib, lib_signal)
        h.dispatch(r, all_to_all_v_kernel, xv[r], send_counts[r], vout[r], vcounts[r], lib_vout[r], lib_vcounts[r],
                   vtarget, recv_counts, signal, lib_vtarget, lib_recv_counts, lib_signal)

    inp = window((P, SIZE), np.float32, "host_input")
    host_target = window((P, SIZE), np.float32, "host_target")
    for k in range(ROUNDS):
        for r in range(P):
            h.dispatch(r, stage, x[r][k], inp)
        h.all_to_all(inp, host_target)
        for r in range(P):
            h.dispatch(r, collect, host_target, host_out[r][k])


def main():
    config, _ = tutorial.parse_devices(
        "15_all_to_all", "Step 15: all-to-all by push, then pld.tensor.all_to_all / h.all_to_all")
    P = config.world_size()

    def body():
        x = tutorial.random((P, ROUNDS, P, SIZE), seed=15)
        out = np.zeros((P, ROUNDS, P, SIZE), np.float32)
        lib_out = np.zeros((P, ROUNDS, P, SIZE), np.float32)
        host_out = np.zeros((P, ROUNDS, P, SIZE), np.float32)
        xv = tutorial.random((P, P * MAX_RECV, SIZE), seed=150)
        send_counts = np.array([[count_of(s, d) for d in range(P)] for s in range(P)], np.int32)
        vout = np.zeros((P, P * MAX_RECV, SIZE), np.float32)
        lib_vout = np.zeros((P, P * MAX_RECV, SIZE), np.float32)
        vcounts = np.full((P, P), -1, np.int32)
        lib_vcounts = np.full((P, P), -1, np.int32)
        pld.run(config, all_to_all_program, x, out, lib_out, host_out, xv, send_counts, vout, vcounts, lib_vout,
                lib_vcounts)
        if pld.is_output_rank():
            print(f"P = {P}: each rank sent {P} rows and received {P}, one per peer (itself included)")
            print("part B: rank 0 received " + " ".join(str(c) for c in vcounts[0]) + f" rows from ranks 0..{P - 1}")

        # =======================================================================================
        # STEP 6: the golden: the transpose of the grid of rows.
        # =======================================================================================
        want = x.transpose(2, 1, 0, 3)  # want[r][k][s] = x[s][k][r]
        # Part B: block s of rank r holds count_of(s, r) rows of xv[s]'s block r, then zeros.
        vwant = np.zeros((P, P * MAX_RECV, SIZE), np.float32)
        for r in range(P):
            for s in range(P):
                c = count_of(s, r)
                vwant[r, s * MAX_RECV:s * MAX_RECV + c] = xv[s, r * MAX_RECV:r * MAX_RECV + c]
        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        check.expect("host", host_out, want)
        check.expect("vout", vout, vwant)
        check.expect("vcounts", vcounts, send_counts.T)
        check.expect("lib_vout", lib_vout, vwant)
        check.expect("lib_vcounts", lib_vcounts, send_counts.T)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
