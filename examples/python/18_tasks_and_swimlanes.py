"""Step 18 — tasks, deferred waits and swimlanes.

A ring exchange written as a task graph inside one kernel per rank:
  send     put my block into my right neighbour's `inbox`, notify it
  await    defer_wait until my left neighbour's block has arrived (returns at once)
  local    compute on my own block meanwhile (independent of the exchange)
  combine  out = local result + the left neighbour's block          (needs await and local)
With swimlanes on, every rank writes its task records, and the host merges one Chrome trace
with a flow arrow from each notify to the wait it released. The step checks the result and that
the trace has one flow per rank (each rank's deferred wait was released by its left neighbour).
  out_r = 2 * x_r + x_{r-1}

Concepts introduced:
  - pld.TaskGraph: named tasks (any Python callables), dependencies, several threads per rank
  - pld.system.defer_wait: a waiter task that completes only when its condition holds
  - DistributedConfig swimlane / PLD_SWIMLANE=1, dfx_dir: the trace files and Perfetto

Run:  python3 18_tasks_and_swimlanes.py -d 0,1,2,3      (any number of ranks)
"""

import os
import shutil
import sys
import tempfile

import numpy as np

import pld
import tutorial

SIZE = 256


# =============================================================================================
# STEP 1: the kernel: four tasks on two threads. A task body is any callable (here closures
# over the kernel's arguments); it runs on one of the graph's threads.
# =============================================================================================
def ring_kernel(x, out, inbox, arrived):
    ctx = pld.get_comm_ctx(inbox)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    right = (me + 1) % n  # my block goes right; my left neighbour's arrives here
    twice = np.zeros(SIZE, np.float32)  # the "local" task's result

    def send():
        pld.tensor.put(inbox, right, x)
        pld.system.notify(arrived, right, (0, 0), 1, pld.NotifyOp.AtomicAdd)

    def local():
        twice[...] = 2 * x

    def combine():
        from_left = pld.tile.load(inbox, (0,), (SIZE,))
        pld.tile.store(twice + from_left, (0,), out)

    g = pld.TaskGraph(2, "ring")
    g.add("send", send)
    await_left = g.add("await left", lambda: pld.system.defer_wait(arrived, (0, 0), 1))
    local_task = g.add("local", local)
    g.add("combine", combine, deps=[await_left, local_task])
    g.run()


def ring(h, x, out):
    inbox = h.window(h.alloc_window_buffer((SIZE,), np.float32, "inbox"), (SIZE,), np.float32)
    arrived = h.window(h.alloc_window_buffer((1, 16), np.int32, "arrived"), (1, 16), np.int32)
    for r in range(h.world_size()):
        h.dispatch(r, ring_kernel, x[r], out[r], inbox, arrived)


def main():
    config, _ = tutorial.parse_devices("18_tasks_and_swimlanes", "tasks, deferred waits and swimlanes")
    n = config.world_size()

    def body():
        # =======================================================================================
        # STEP 2: run with swimlanes on, into a fresh directory. Under mpirun every process
        # writes its rank's files into the same directory (named after mpirun's pid, their
        # common parent) and rank 0 merges the trace.
        # =======================================================================================
        spmd = pld.launcher_world_size() > 0
        trace_dir = os.path.join(tempfile.gettempdir(), f"pld-step18-py-{os.getppid() if spmd else os.getpid()}")
        config.swimlane = True
        config.dfx_dir = trace_dir
        x = tutorial.small_integers((n, SIZE), 18)
        out = np.zeros((n, SIZE), np.float32)
        pld.run(config, ring, x, out)

        # =======================================================================================
        # STEP 3: the golden, and the trace: one notify->wait flow per rank.
        # =======================================================================================
        check = tutorial.Checker()
        check.expect("out", out, 2 * x + np.roll(x, 1, axis=0))
        if pld.is_output_rank():  # the process that merged the trace
            path = os.path.join(trace_dir, "trace_call0.json")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            flows = text.count('"ph":"s"')
            print(f"trace: {path} ({len(text)} bytes, {flows} notify->wait flows) — open it in ui.perfetto.dev")
            check.expect("flows", flows, n)
            shutil.rmtree(trace_dir, ignore_errors=True)
        return check.report()

    return tutorial.guarded(body)


if __name__ == "__main__":
    sys.exit(main())
