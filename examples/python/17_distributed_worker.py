"""Step 17 — DistributedWorker: fork once, dispatch many times.

A toy training loop. Every rank keeps a weight shard resident in its own process for the whole
run (a stacked device tensor: shard r lives in rank r); each step
  1. stages the rank's gradient x_r[step] into a window,
  2. all-reduces the gradients (pld's host builtin),
  3. adds the sum to the resident shard:            w_r += sum over ranks of x_r[step]
and a host callback between the dispatches records the reduced gradient's first element — the
host "sub-worker" of the model. The worker keeps its windows across calls (persistent), runs two
calls in flight with submit(), and finally copies the shards back.
  w_r = w0_r + sum over steps and ranks of x           (checked against a host golden)

Concepts introduced:
  - pld.DistributedWorker: ranks forked once, programs run with rt(...), rt.run(), rt.submit();
    a context manager that closes the worker
  - which kernels a fork-once worker can run: functions defined at module level before it
    starts (the ranks were forked then), or listed in kernels=[...]
  - resident tensors: alloc_stacked_tensor / copy_stacked_from / free_stacked_tensor; a shard
    reaches its kernel as a numpy array of the rank's own memory (no host copy)
  - persistent=True: the same window place in every call
  - h.callback: host code between the dispatches of one call
  - RunHandle: two calls in flight, result() raises a call's error

Run:  python3 17_distributed_worker.py -d 0,1,2,3      (any number of ranks)
"""

import sys

import numpy as np

import pld
import tutorial
from tutorial import stage

SIZE = 64
STEPS = 6


# =============================================================================================
# STEP 1: the kernels. `w` is the rank's resident shard, `x` a row of a host tensor. They are
# module-level functions defined before the worker starts, so its rank processes have them.
# (stage, a put to yourself, is in tutorial.py.)
# =============================================================================================
def apply(grad, w):
    total = pld.tile.load(grad, (0,), (SIZE,))
    pld.tile.store(pld.tile.load(w, (0,), (SIZE,)) + total, (0,), w)


def peek(grad, out):
    pld.tile.write(out, (0,), pld.tile.read(grad, (0,)))


# =============================================================================================
# STEP 2: the program: one training step. Called once per step; the ranks stay alive between.
# =============================================================================================
def train_step(h, w, x, trace):
    grad = h.window(h.alloc_window_buffer((SIZE,), np.float32, "grad"), (SIZE,), np.float32)
    for r in range(h.world_size()):
        h.dispatch(r, stage, x[r], grad)
    h.allreduce(grad)  # pld's signal: self-clearing, so the persistent window needs no reset
    # On the host, between the all-reduce and the update: peek at the reduced gradient through a
    # one-element host tensor that a tiny dispatch fills. The callback runs in this process, so
    # it may be any callable (here a lambda appending to a Python list).
    first = pld.HostTensor.zeros((1,), np.float32)
    h.dispatch(0, peek, grad, first)
    h.callback(lambda: trace.append(float(first.numpy()[0])))
    for r in range(h.world_size()):
        h.dispatch(w[r].worker_id, apply, grad, w[r])


def main():
    config, _ = tutorial.parse_devices("17_distributed_worker", "DistributedWorker: fork once, dispatch many")
    n = config.world_size()

    def body():
        w0 = tutorial.small_integers((n, SIZE), 17)
        # The gradients live in shared memory from the start: rt(...) would copy plain numpy
        # arrays in and back as pld.run does, but submit() returns before its call runs, so a
        # submitted call takes pld.HostTensor.
        xs = [pld.HostTensor.from_numpy(tutorial.small_integers((n, SIZE), 100 + s, -4, 4)) for s in range(STEPS)]
        trace = []

        # =======================================================================================
        # STEP 3: the worker. Ranks fork here, once.
        # =======================================================================================
        with pld.DistributedWorker(config, train_step, persistent=True, reset_persistent_windows=False) as rt:
            w = rt.alloc_stacked_tensor(w0)

            # ===================================================================================
            # STEP 4: the loop. The first half blocks per step; the second keeps two steps in
            # flight.
            # ===================================================================================
            for s in range(STEPS // 2):
                rt(w, xs[s], trace)
            inflight = [rt.submit(train_step, w, xs[s], trace) for s in range(STEPS // 2, STEPS)]
            for handle in inflight:
                handle.result()

            w_final = rt.copy_stacked_from(w)
            rt.free_stacked_tensor(w)

        # =======================================================================================
        # STEP 5: the golden.
        # =======================================================================================
        sums = [x.numpy().sum(axis=0) for x in xs]
        golden = w0 + np.sum(sums, axis=0, dtype=np.float32)
        check = tutorial.Checker()
        check.expect("w", w_final, golden)
        check.expect("callback trace", np.array(trace, np.float32), np.array([s[0] for s in sums], np.float32))
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
