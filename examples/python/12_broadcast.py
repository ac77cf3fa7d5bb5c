"""Step 12 — broadcast: one rank's data to every rank, by hand as a binomial tree.

The root stages its data in its window; afterwards every rank's copy equals the root's. The
simplest schedule lets all P-1 ranks read the root (that is what pld does, below). The classic
hand-rolled one is a tree: in round j = 0, 1, 2, ... every rank that already has the data
sends it to the rank 2^j further on, so the number of ranks holding it doubles each round and
everyone has it after ceil(log2 P) rounds. Ranks are numbered relative to the root,
rel = (me - root) % P:
  my parent   = rel minus its highest set bit             (rel 6 = 0b110 gets it from 2)
  my children = rel + 2^j for every 2^j above that bit    (rel 2 sends to 6, then 10, ...)
P = 8, root 0:   0 -> 1 | 0 -> 2, 1 -> 3 | 0 -> 4, 1 -> 5, 2 -> 6, 3 -> 7      (3 rounds)

No barrier: each edge of the tree is a two-message handshake in a [P, 2] signal window,
  cell [c, READY]   on a parent: "child c's copy is free, send when you have it"
  cell [p, ARRIVED] on a child:  "parent p's put has landed in your copy"
and each side gives back the one credit it consumed at once, so the cells are 0 again after
every call, whichever root the next call has.
The kernel broadcasts from three roots in turn (0, P-1, P/2) on one signal:
  out[r][k]  = x[root_k][k]          what the tree delivered
  lib[r][k]  = x[root_k][k]          pld.tensor.broadcast in the same kernel
  host[r][k] = x[root_k][k]          h.broadcast from the orchestrator
  after[r]   = 0                     every handshake credit was given back

Concepts introduced:
  - broadcast semantics: only the root's input matters; every copy becomes the root's
  - relative ranks: any root becomes rank 0 of the schedule
  - a tree: log2 P rounds instead of P-1 reads of one rank
  - pairwise handshakes (ready / arrived) instead of a P-rank barrier; a push must not land in
    a copy its owner is still reading
  - pld.tensor.broadcast(target, signal, root=root) and h.broadcast(target, root=root)

Run:  python3 12_broadcast.py -d 0,1,2,3,4,5,6,7      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from tutorial import collect, stage

SIZE = 256
ROUNDS = 3

# Columns of the tree's [P, 2] signal window. Row s of a column is written by rank s only.
READY, ARRIVED = 0, 1


def root_of(k, n):
    """The root of round k: 0, then the last rank, then the middle one."""
    return (0, n - 1, n // 2)[k]


# =============================================================================================
# STEP 1: the tree broadcast. On entry the root's `data` holds the payload; on return every
# rank's does.
# =============================================================================================
def broadcast_tree(data, signal, root):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    rel = (me - root) % n

    # Receive (everyone but the root): announce that my copy is free, wait for the parent's put.
    first_child = 1  # the root sends to rel 1, 2, 4, ...
    if rel != 0:
        high = 1 << (rel.bit_length() - 1)  # rel's highest set bit
        parent = (rel - high + root) % n
        pld.system.notify(signal, parent, (me, READY), 1, pld.NotifyOp.AtomicAdd)
        pld.system.wait(signal, (parent, ARRIVED), 1, pld.WaitCmp.Ge)
        pld.system.notify(signal, me, (parent, ARRIVED), -1, pld.NotifyOp.AtomicAdd)  # credit back
        first_child = 2 * high

    # Send, one round after another: to rel + 2^j while that rank exists.
    step = first_child
    while rel + step < n:
        child = (rel + step + root) % n
        pld.system.wait(signal, (child, READY), 1, pld.WaitCmp.Ge)  # its copy is free
        pld.system.notify(signal, me, (child, READY), -1, pld.NotifyOp.AtomicAdd)
        # My copy -> the child's copy, then tell it (the notify releases the put).
        pld.tensor.put(data, child, data)
        pld.system.notify(signal, child, (me, ARRIVED), 1, pld.NotifyOp.AtomicAdd)
        step *= 2


# =============================================================================================
# STEP 2: the kernel: three broadcasts by hand on one signal, each followed by pld's.
# =============================================================================================
def broadcast_kernel(x, out, lib_out, after, data, signal, lib, lib_signal):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    for k in range(ROUNDS):
        root = root_of(k, n)

        # Only the root stages; whatever the other copies hold is overwritten.
        if me == root:
            pld.tensor.put(data, me, x[k])
        broadcast_tree(data, signal, root)
        pld.tensor.get(out[k], me, data)

        # pld: the root stages, one call (barrier, every rank copies from the root, barrier).
        if me == root:
            pld.tensor.put(lib, me, x[k])
        pld.tensor.broadcast(lib, lib_signal, root=root)
        pld.tensor.get(lib_out[k], me, lib)
    for s in range(n):
        for c in (READY, ARRIVED):
            pld.tile.write(after, (s, c), pld.tile.read(signal, (s, c)))


# =============================================================================================
# STEP 3: the host orchestrator: the kernel above, then the builtin: stage on the root only,
# h.broadcast, collect everywhere (stage and collect are in tutorial.py).
# =============================================================================================
def broadcast_program(h, x, out, lib_out, host_out, after):
    P = h.world_size()
    data_buf = h.alloc_window_buffer((1, SIZE), np.float32, "data")
    signal_buf = h.alloc_window_buffer((P, 2), np.int32, "tree_signal")
    lib_buf = h.alloc_window_buffer((1, SIZE), np.float32, "lib_data")
    lib_signal_buf = h.alloc_window_buffer((P, 1), np.int32, "lib_signal")
    for r in range(P):
        h.dispatch(r, broadcast_kernel, x[r], out[r], lib_out[r], after[r], h.window(data_buf, (1, SIZE), np.float32),
                   h.window(signal_buf, (P, 2), np.int32), h.window(lib_buf, (1, SIZE), np.float32),
                   h.window(lib_signal_buf, (P, 1), np.int32))

    host_buf = h.alloc_window_buffer((1, SIZE), np.float32, "host_data")
    target = h.window(host_buf, (1, SIZE), np.float32)
    for k in range(ROUNDS):
        root = root_of(k, P)
        h.dispatch(root, stage, x[root][k], target)
        h.broadcast(target, root=root)
        for r in range(P):
            h.dispatch(r, collect, target, host_out[r][k])


def main():
    config, _ = tutorial.parse_devices(
        "12_broadcast", "Step 12: broadcast as a binomial tree, then pld.tensor.broadcast / h.broadcast")
    P = config.world_size()

    def body():
        x = tutorial.random((P, ROUNDS, 1, SIZE), seed=12)
        out = np.zeros((P, ROUNDS, 1, SIZE), np.float32)
        lib_out = np.zeros((P, ROUNDS, 1, SIZE), np.float32)
        host_out = np.zeros((P, ROUNDS, 1, SIZE), np.float32)
        after = np.full((P, P, 2), -1, np.int32)
        pld.run(config, broadcast_program, x, out, lib_out, host_out, after)

        # The tree of round 0, as the kernel walked it (parent -> child, round by round).
        if pld.is_output_rank():
            rounds, step = [], 1
            while step < P:
                rounds.append(" ".join(f"{rel}->{rel + step}" for rel in range(step) if rel + step < P))
                step *= 2
            plural = "" if len(rounds) == 1 else "s"
            print(f"tree from root 0 over {P} ranks: {' | '.join(rounds)} ({len(rounds)} round{plural})")

        # =======================================================================================
        # STEP 4: the golden: every rank holds the root's row of each round.
        # =======================================================================================
        want = np.zeros((P, ROUNDS, 1, SIZE), np.float32)
        for k in range(ROUNDS):
            want[:, k] = x[root_of(k, P), k]
        check = tutorial.Checker()
        check.expect("out", out, want)
        check.expect("lib", lib_out, want)
        check.expect("host", host_out, want)
        check.expect("after", after, np.zeros((P, P, 2), np.int32))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
