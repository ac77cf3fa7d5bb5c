"""pld quickstart in Python: a 4-rank allreduce written with the primitives — stage in, a
notify/wait barrier, accumulate every peer's window with remote_load, stage out.

Run:  PYTHONPATH=build/python python3 examples/python/quickstart.py
"""

import sys

import numpy as np

import pld

SIZE = 256


# Kernel: runs inside each rank process. inp and out are this rank's slices (numpy arrays),
# data and signal its views of two window buffers.
def reduce_step(inp, out, data, signal):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    pld.tile.store(pld.tile.load(inp, (0, 0), (1, SIZE)), (0, 0), data)  # 1. stage in
    for p in range(n):                                                   # 2. barrier
        if p != me:
            pld.system.notify(signal, p, (me, 0), 1, pld.NotifyOp.AtomicAdd)
    for s in range(n):
        if s != me:
            pld.system.wait(signal, (s, 0), 1, pld.WaitCmp.Ge)
    acc = pld.tile.load(data, (0, 0), (1, SIZE))                         # 3. accumulate
    for p in range(n):
        if p != me:
            acc = acc + pld.tile.remote_load(data, p, (0, 0), (1, SIZE))
    pld.tile.store(acc, (0, 0), out)                                     # 4. stage out


# Host orchestrator: allocates the windows and dispatches one kernel per rank.
def orchestrator(h, inp, out):
    data_buf = h.alloc_window_buffer(SIZE * 4, "data")  # bytes
    sig_buf = h.alloc_window_buffer((h.world_size(), 1), pld.DType.INT32, "signal")
    for r in range(h.world_size()):
        h.dispatch(r, reduce_step, inp[r], out[r], h.window(data_buf, (1, SIZE), np.float32),
                   h.window(sig_buf, (h.world_size(), 1), np.int32))


def main():
    ranks = 4
    config = pld.DistributedConfig(device_ids=[0, 1, 2, 3])
    inp = np.arange(ranks * SIZE, dtype=np.float32).reshape(ranks, 1, SIZE)
    out = np.zeros((ranks, 1, SIZE), np.float32)
    pld.run(config, orchestrator, inp, out)  # forks 4 ranks, blocks until all finish

    # Every rank holds the sum over ranks of inp[r][0][i] = r * SIZE + i.
    want = inp.sum(axis=0)
    wrong = int(np.count_nonzero(out != want))
    print(f"allreduce over {ranks} ranks, {SIZE} floats each: out[0][0][0..3] = "
          + " ".join(f"{v:g}" for v in out[0, 0, :4]))
    print("MISMATCH" if wrong else "OK")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
