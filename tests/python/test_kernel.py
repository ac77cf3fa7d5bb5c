"""Kernel-side calls: comm contexts, window views as numpy arrays, pld.tile, pld.system signals and
atomics, pld.tensor transfers — each checked on the ranks, with the results written to host
tensors the test reads afterwards."""
import numpy as np
import pytest

import pld

N = 8


def run_on(ranks, kernel, *buffers, out_shape=(1,), out_dtype=np.int64):
    """Runs kernel(out[r], *views) on every rank; buffers are (shape, dtype) window buffers."""
    out = np.zeros((ranks,) + out_shape, out_dtype)

    def orch(h, o):
        views = [h.window(h.alloc_window_buffer(shape, dt, f"b{i}"), shape, dt) for i, (shape, dt) in
                 enumerate(buffers)]
        for r in range(h.world_size()):
            h.dispatch(r, kernel, o[r], *views)

    pld.run(pld.DistributedConfig(device_ids=list(range(ranks))), orch, out)
    return out


def ctx_kernel(out, data):
    ctx = pld.get_comm_ctx(data)
    out[0] = pld.rank(ctx)
    out[1] = pld.nranks(ctx)
    out[2] = ctx.world_rank(pld.rank(ctx))
    view = data.numpy()  # this rank's copy, no copy
    assert view.shape == (1, N) and view.dtype == np.float32 and (view == 0).all()
    view[...] = pld.rank(ctx)
    assert pld.tile.read(data, (0, 3)) == pld.rank(ctx)


def test_comm_ctx_and_window_numpy():
    out = run_on(3, ctx_kernel, ((1, N), pld.DType.FP32), out_shape=(3,))
    assert out.tolist() == [[0, 3, 0], [1, 3, 1], [2, 3, 2]]


def ring_kernel(out, data, sig):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    nxt = (me + 1) % n
    pld.tile.store(np.full((1, N), me + 1, np.float32), (0, 0), data)
    pld.system.notify(sig, nxt, (me, 0), 1, pld.NotifyOp.AtomicAdd)
    prv = (me - 1) % n
    pld.system.wait(sig, (prv, 0), 1, pld.WaitCmp.Ge)
    assert pld.system.signal_fetch(sig, (prv, 0)) == 1
    assert pld.system.test(sig, (prv, 0), 1, pld.WaitCmp.Eq)
    # prv stored before it notified us: its data is visible
    tile = pld.tile.remote_load(data, prv, (0, 0), (1, N))
    out[0] = int(tile.sum())
    half = pld.tile.remote_load(data, prv, (0, 0), (1, N), valid_shape=(1, 2))
    out[1] = int(half.sum())


def test_notify_wait_remote_load():
    out = run_on(3, ring_kernel, ((1, N), pld.DType.FP32), ((3, 1), pld.DType.INT32), out_shape=(2,))
    for me in range(3):
        prv = (me - 1) % 3
        assert out[me].tolist() == [(prv + 1) * N, (prv + 1) * 2]


def put_get_kernel(out, data, sig):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    nxt, prv = (me + 1) % n, (me - 1) % n
    src = np.arange(N, dtype=np.float32).reshape(1, N) + 100 * me
    pld.tensor.put(data, nxt, src)
    pld.tensor.put(data, nxt, src, (0, 0), (0, 0), (1, 2), atomic=pld.AtomicType.Add)
    pld.tensor.put_signal(data, nxt, src, (0, 4), (0, 0), (1, 1), sig, (me, 0), 1, pld.NotifyOp.Set)
    pld.system.wait(sig, (prv, 0), 1, pld.WaitCmp.Eq)
    mine = data.numpy()
    expect = np.arange(N, dtype=np.float32) + 100 * prv
    expect[:2] *= 2
    expect[4] = 100 * prv
    assert (mine[0] == expect).all(), (mine, expect)
    back = np.zeros((1, N), np.float32)
    pld.tensor.get(back, nxt, data)
    pld.tensor.get_nbi(back, nxt, data, (0, 0), (0, 0), (1, 1))
    pld.system.quiet()
    out[0] = int(back[0, 1])
    pld.tensor.barrier(sig)


def test_put_get_put_signal():
    out = run_on(2, put_get_kernel, ((1, N), pld.DType.FP32), ((2, 1), pld.DType.INT32))
    assert out[:, 0].tolist() == [2 * (1 + 0), 2 * (1 + 100)]


def rma_binding_kernel(out, data, sig):
    """The region form by position or by keyword, put_signal's two positional forms, and the
    binding errors of the RMA calls."""
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    nxt, prv = (me + 1) % n, (me - 1) % n
    t = pld.tensor
    src = np.full((1, N), me + 1, np.float32)
    t.put(data, nxt, src, shape=(1, 2), src_offsets=(0, 0), dst_offsets=(0, 2))
    t.put_signal(data, nxt, src, (0, 5), (0, 0), (1, 1), sig, (me, 0), 1, pld.NotifyOp.Set, pipeline=False)
    t.put_signal(data, nxt, src, sig, (me, 0), 1, pld.NotifyOp.AtomicAdd, dst_offsets=(0, 6), src_offsets=(0, 0),
                 shape=(1, 1))
    pld.system.wait(sig, (prv, 0), 2, pld.WaitCmp.Eq)
    mine = data.numpy()[0]
    assert mine[2:4].tolist() == [prv + 1] * 2 and mine[5] == prv + 1 and mine[6] == prv + 1, mine
    back = np.zeros((1, 2), np.float32)
    t.get(back, prv, data, dst_offsets=(0, 0), src_offsets=(0, 2), shape=(1, 2))
    assert back.tolist() == [[me + 1] * 2]
    with pytest.raises(pld.UsageError, match=r"tensor::put: the region form needs dst_offsets, src_offsets and shape "
                                             r"together \(got 2 of 3\)"):
        t.put(data, nxt, src, (0, 0), (0, 0))
    with pytest.raises(TypeError, match="put.. got an unexpected keyword argument 'atomics'"):
        t.put(data, nxt, src, atomics=pld.AtomicType.Add)
    with pytest.raises(TypeError, match=r"put_signal\(\) missing required argument 'signal'"):
        t.put_signal(data, nxt, src, sig, (me, 0))
    with pytest.raises(pld.UsageError, match="tensor::get: chunk_rows is a str; pass an int"):
        t.get(back, prv, data, chunk_rows="2")
    with pytest.raises(pld.UsageError, match="tensor::put_nbi: src is a list; pass a numpy array"):
        t.put_nbi(data, nxt, [1, 2])
    t.barrier(sig)
    out[0] = 1


def test_rma_call_binding():
    out = run_on(2, rma_binding_kernel, ((1, N), pld.DType.FP32), ((2, 1), pld.DType.INT32))
    assert out[:, 0].tolist() == [1, 1]


def atomic_kernel(out, cells):
    ctx = pld.get_comm_ctx(cells)
    me = pld.rank(ctx)
    pld.system.atomic_add(cells, 0, (0,), 5)
    old = pld.system.atomic_fetch_add(cells, 0, (1,), 1)
    assert 0 <= old < pld.nranks(ctx)
    pld.system.atomic_compare_swap(cells, 0, (2,), 0, me + 10)
    pld.system.atomic_inc(cells, 0, (3,))
    pld.system.atomic_or(cells, 0, (4,), 1 << me)
    assert pld.system.atomic_fetch(cells, me, (5,)) == 0
    out[0] = pld.system.atomic_swap(cells, me, (5,), 2)


@pytest.mark.parametrize("dtype", [pld.DType.INT32, pld.DType.INT64, pld.DType.UINT32, pld.DType.UINT64])
def test_atomics(dtype):
    out = run_on(2, atomic_kernel, ((8,), dtype))
    assert (out[:, 0] == 0).all()


def atomic_result_kernel(out, cells, sig):
    atomic_kernel(out[:1], cells)
    pld.tensor.barrier(sig)
    if pld.rank(pld.get_comm_ctx(cells)) == 0:
        out[1:] = cells.numpy()[:5]


def test_atomic_results():
    out = run_on(2, atomic_result_kernel, ((8,), pld.DType.INT64), ((2, 1), pld.DType.INT32), out_shape=(6,))
    assert out[0, 1:].tolist() == [10, 2, out[0, 3], 2, 3]
    assert out[0, 3] in (10, 11)


def bad_atomic_kernel(out, cells):
    pld.system.atomic_add(cells, 0, (0,), 1 << 40)


def test_atomic_value_out_of_range():
    with pytest.raises(pld.RankError, match="does not fit a int32 cell"):
        run_on(2, bad_atomic_kernel, ((4,), pld.DType.INT32))


def multi_wait_kernel(out, sig):
    ctx = pld.get_comm_ctx(sig)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    for p in range(n):
        pld.system.notify(sig, p, (me, 0), me + 1, pld.NotifyOp.Set)
    cells = [(p, 0) for p in range(n)]
    pld.system.wait_until_all(sig, cells, 1, pld.WaitCmp.Ge)
    out[0] = pld.system.wait_until_any(sig, cells, [p + 1 for p in range(n)], pld.WaitCmp.Eq)
    out[1] = len(pld.system.wait_until_some(sig, cells, 1, pld.WaitCmp.Ge))


def test_multi_cell_waits():
    out = run_on(3, multi_wait_kernel, ((3, 1), pld.DType.INT32), out_shape=(2,))
    assert (out[:, 1] == 3).all()


def tile_kernel(out, data):
    a = pld.tile.load(out, (0,), (4,))
    assert a.dtype == out.dtype
    b = pld.tile.add(a, a)
    pld.tile.store(pld.tile.mul(b, 2), (4,), out)
    pld.tile.write(out, (8,), 7)
    assert pld.tile.read(out, (8,)) == 7
    has_add = out.dtype in (np.float32, np.float16, np.uint16, np.int32, np.int16, np.int8)
    atomic = pld.AtomicType.Add if has_add else pld.AtomicType.NONE
    pld.tile.remote_store(pld.tile.full((1, 2), 3, out.dtype), data, 0, (0, 0), atomic)
    m = pld.tile.max(a, pld.tile.sub(a, 1))
    assert (m == a).all() if out.dtype != np.uint16 else True


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int16", "int8", "int64", "float64",
                                   "uint8", "uint32", "uint64"])
def test_tile_ops_every_dtype(dtype):
    npdt = pld.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    d = pld.dtype(npdt)
    values = [1, 2, 3, 4]
    raw = pld.to_bfloat16(values) if dtype == "bfloat16" else np.array(values, npdt)
    out = np.zeros((1, 9), npdt)
    out[0, :4] = raw

    def orch(h, o):
        w = h.window(h.alloc_window_buffer((1, 2), d), (1, 2), d)
        h.dispatch(0, tile_kernel, o[0], w)

    pld.run(pld.DistributedConfig(device_ids=[0]), orch, out)
    got = pld.from_bfloat16(out[0]) if dtype == "bfloat16" else out[0].astype(np.float64)
    assert got.tolist() == [1, 2, 3, 4, 4, 8, 12, 16, 7]


def bad_tile_kernel(out, data):
    pld.tile.load(data, (0, 5), (1, N))


def test_tile_out_of_bounds_names_the_call():
    with pytest.raises(pld.RankError, match="tile::load"):
        run_on(1, bad_tile_kernel, ((1, N), pld.DType.FP32))


def test_window_has_no_memory_on_the_host(config2):
    def orch(h):
        w = h.window(h.alloc_window_buffer(64), (16,), np.float32)
        with pytest.raises(pld.UsageError, match="only inside a kernel"):
            w.numpy()
        with pytest.raises(pld.UsageError, match="does not fit|bytes"):
            h.window(h.alloc_window_buffer(16), (16,), np.float32)
        with pytest.raises(pld.UsageError, match="not a pld element type"):
            h.window(h.alloc_window_buffer(16), (4,), np.complex64)
        with pytest.raises(pld.UsageError, match="not a tuple of ints"):
            h.window(h.alloc_window_buffer(16), "4", np.float32)
        assert w.shape == (16,) and w.dtype == pld.DType.FP32
    pld.run(config2, orch)


def strided_kernel(out, data):
    src = np.zeros((2, 2 * N), np.float32)[:, ::2]  # not C-contiguous
    pld.tile.store(src, (0, 0), data)


def test_non_contiguous_array_is_refused():
    with pytest.raises(pld.RankError, match="not C-contiguous; pass numpy.ascontiguousarray"):
        run_on(1, strided_kernel, ((2, N), pld.DType.FP32))


def test_explicit_shm_backend():
    out = np.zeros((2, 1), np.int64)
    config = pld.DistributedConfig(device_ids=[3, 7], backend=pld.BackendKind.Shm, heap_bytes=1 << 24)
    assert config.world_size() == 2 and config.device_ids == [3, 7]
    pld.run(config, lambda h, o: [h.dispatch(r, ctx_rank_kernel, o[r], r) for r in range(2)], out)
    assert out.ravel().tolist() == [0, 1]


def ctx_rank_kernel(out, r):
    out[0] = r


def enum_typo_kernel(out, sig):
    pld.system.wait(sig, (0, 0), 1, "ge")


def test_enum_typo_names_op_value_and_fix():
    with pytest.raises(pld.RankError, match=r"wait: cmp 'ge' is not a pld.WaitCmp; pass one of pld.WaitCmp.Eq"):
        run_on(1, enum_typo_kernel, ((1, 1), pld.DType.INT32))


def wait_out_of_range_kernel(out, sig):
    pld.system.wait(sig, (5, 0), 1, pld.WaitCmp.Ge)


def test_wait_out_of_range_names_wait():
    message = r"UsageError: wait\(signal .b0., offsets \[5, 0\]\): signal cell exceeds dimension 0"
    with pytest.raises(pld.RankError, match=message):
        run_on(1, wait_out_of_range_kernel, ((1, 1), pld.DType.INT32))
