"""Step 19 — MoE dispatch: each token reserves its slot on its expert's rank with one atomic.

Expert parallelism as a mixture-of-experts layer runs it: every rank holds TOKENS tokens (rows of
HIDDEN floats) and one expert; a router sends each token to one expert, the expert processes
what it received, and the results go back to the tokens' owners.
  1. dispatch  for each token: slot = atomic_fetch_add(count on the expert's rank, 1), then put
               the token into row `slot` of the expert's inbox and its origin into `origin`
  2. barrier   every token has landed
  3. expert    rank e processes its count rows (here: y = x * (e + 1)) and puts each result
               back into row t of the owner's `result`
  4. barrier   every result has landed
The slot order differs from run to run (whichever token's fetch_add comes first); the results
do not.

Concepts introduced:
  - pld.system.atomic_fetch_add: a fetching atomic on a peer's window cell; the old value is
    the caller's own, unique slot
  - windows of int64 cells (alloc_window_buffer with np.int64 / pld.DType.INT64), read with
    atomic_fetch
  - an atomic is a release, a barrier the acquire that makes every put visible

Run:  python3 19_moe_dispatch.py -d 0,1,2,3      (any number of ranks; one expert per rank)
"""

import sys

import numpy as np

import pld
import tutorial

TOKENS = 16  # tokens per rank
HIDDEN = 8   # floats per token


def route(r, t, n):
    """The router: the expert (= rank) of token t of rank r. Uneven on purpose (from 3 ranks on),
    as real routers are: experts receive different numbers of tokens."""
    return (r + 1) * (t + 3) // 2 % n


# =============================================================================================
# STEP 1-4: the kernel. Windows: count ([1], int32), inbox ([P * TOKENS, HIDDEN] fp32), origin
# ([P * TOKENS, 1] int64: source rank * TOKENS + token), result ([TOKENS, HIDDEN] fp32), signal.
# =============================================================================================
def moe_kernel(tokens, out, received, count, inbox, origin, result, signal):
    ctx = pld.get_comm_ctx(count)
    me, n = pld.rank(ctx), pld.nranks(ctx)

    # STEP 1: dispatch. The fetch_add returns the expert's counter before my increment: a slot
    # nobody else gets. The stores that follow go to that row only, so no two tokens collide.
    for t in range(TOKENS):
        expert = route(me, t, n)
        slot = pld.system.atomic_fetch_add(count, expert, (0,), 1)
        pld.tile.remote_store(pld.tile.load(tokens, (t, 0), (1, HIDDEN)), inbox, expert, (slot, 0))
        pld.tile.remote_store(np.full((1, 1), me * TOKENS + t, np.int64), origin, expert, (slot, 0))

    # STEP 2: every token of every rank is in its expert's inbox after the barrier.
    pld.tensor.barrier(signal)

    # STEP 3: the expert. My counter now holds how many tokens I received.
    mine = pld.system.atomic_fetch(count, me, (0,))
    for s in range(mine):
        y = pld.tile.load(inbox, (s, 0), (1, HIDDEN)) * np.float32(me + 1)
        source = int(pld.tile.read(origin, (s, 0)))
        pld.tile.remote_store(y, result, source // TOKENS, (source % TOKENS, 0))

    # STEP 4: every result is home after the second barrier.
    pld.tensor.barrier(signal)
    pld.tensor.get(out, me, result)
    pld.tile.write(received, (0,), mine)


# =============================================================================================
# STEP 5: the host orchestrator: the windows, one dispatch per rank.
# =============================================================================================
def moe_program(h, tokens, out, received):
    P = h.world_size()
    cap = P * TOKENS  # an expert may receive every token
    count = h.alloc_window_buffer((1,), np.int32, "count")
    inbox = h.alloc_window_buffer((cap, HIDDEN), np.float32, "inbox")
    origin = h.alloc_window_buffer((cap, 1), pld.DType.INT64, "origin")
    result = h.alloc_window_buffer((TOKENS, HIDDEN), np.float32, "result")
    signal = h.alloc_window_buffer((P, 1), np.int32, "signal")
    for r in range(P):
        h.dispatch(r, moe_kernel, tokens[r], out[r], received[r], h.window(count, (1,), np.int32),
                   h.window(inbox, (cap, HIDDEN), np.float32), h.window(origin, (cap, 1), np.int64),
                   h.window(result, (TOKENS, HIDDEN), np.float32), h.window(signal, (P, 1), np.int32))


def main():
    config, _ = tutorial.parse_devices(
        "19_moe_dispatch", "Step 19: MoE dispatch, each token reserving its slot with atomic_fetch_add")
    P = config.world_size()

    def body():
        tokens = tutorial.small_integers((P, TOKENS, HIDDEN), seed=191)
        out = np.zeros((P, TOKENS, HIDDEN), np.float32)
        received = np.zeros((P, 1), np.int32)
        pld.run(config, moe_program, tokens, out, received)

        # =======================================================================================
        # STEP 6: the golden: each token times its expert's factor; each expert's load.
        # =======================================================================================
        out_want = np.zeros((P, TOKENS, HIDDEN), np.float32)
        received_want = np.zeros((P, 1), np.int32)
        for r in range(P):
            for t in range(TOKENS):
                e = route(r, t, P)
                received_want[e, 0] += 1
                out_want[r, t] = tokens[r, t] * np.float32(e + 1)
        if pld.is_output_rank():
            print("tokens per expert: " + " ".join(str(c) for c in received[:, 0]))

        check = tutorial.Checker()
        check.expect("received", received, received_want)
        check.expect("out", out, out_want)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
