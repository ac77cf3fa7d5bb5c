"""The same Python program under mpirun (mpirun -n P python3 -m pytest mpi_spmd.py): every MPI
process runs the whole script (SPMD replay) and executes its own rank's dispatches; host tensors
hold every rank's results at the end of each call (PLD_MPI_HOST_SYNC=merge, the default)."""
import numpy as np
import pytest

import pld

N = 16


@pytest.fixture(scope="module")
def config():
    p = pld.launcher_world_size()
    if p == 0:
        pytest.skip("run under mpirun")
    return pld.DistributedConfig(device_ids=list(range(p)))


def ring_kernel(out, data, sig):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    pld.tile.store(np.full((1, N), me + 1, np.float32), (0, 0), data)
    pld.system.notify(sig, (me + 1) % n, (me, 0), 1, pld.NotifyOp.AtomicAdd)
    prv = (me - 1) % n
    pld.system.wait(sig, (prv, 0), 1, pld.WaitCmp.Ge)
    out[...] = pld.tile.remote_load(data, prv, (0, 0), (1, N))
    pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
    out[0, 0] = pld.tile.read(data, (0, 0))
    assert (data.numpy() == out[0, 0]).all()  # this rank's window copy as a numpy array


def test_ring_and_allreduce(config):
    p = config.world_size()
    out = np.zeros((p, 1, N), np.float32)

    def orch(h, o):
        data = h.window(h.alloc_window_buffer((1, N), np.float32, "data"), (1, N), np.float32)
        sig = h.window(h.alloc_window_buffer((p, 1), pld.DType.INT32, "sig"), (p, 1), pld.DType.INT32)
        for r in range(h.world_size()):
            h.dispatch(r, ring_kernel, o[r], data, sig)

    pld.run(config, orch, out)
    for me in range(p):
        assert out[me, 0, 0] == p * (p + 1) / 2
        assert out[me, 0, 1] == (me - 1) % p + 1


def fill_kernel(w, value):
    w.numpy()[...] = value


def read_kernel(out, w):
    out[...] = w.numpy()


def test_host_builtins(config):
    p = config.world_size()
    out = np.zeros((p, p, 4), np.int64)

    def orch(h, o):
        mine = h.window(h.alloc_window_buffer((1, 4), np.int64, "mine"), (1, 4), np.int64)
        rows = h.window(h.alloc_window_buffer((p, 4), np.int64, "rows"), (p, 4), np.int64)
        for r in range(p):
            h.dispatch(r, fill_kernel, mine, r * 10)
        h.allgather(mine, rows)
        h.allreduce(rows, op=pld.ReduceOp.Max)
        for r in range(p):
            h.dispatch(r, read_kernel, o[r], rows)

    pld.run(config, orch, out)
    assert (out[:, :, 0] == np.arange(p) * 10).all()


def raising_kernel(rank):
    if rank == 1:
        raise ValueError("rank 1 fails under mpirun")


def test_rank_error(config):
    with pytest.raises(pld.RankError, match="rank 1 fails") as info:
        pld.run(config, lambda h: [h.dispatch(r, raising_kernel, r) for r in range(h.world_size())])
    assert info.value.rank == 1
