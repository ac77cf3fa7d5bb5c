"""The collectives from kernels (pld.tensor.*, options as keyword arguments) and from the
orchestrator (pld.Host builtins, with or without a signal), on every dtype where they apply, and
their bad input."""
import numpy as np
import pytest

import pld

P = 3
N = 6
DTYPES = ["float32", "float16", "bfloat16", "int32", "int16", "int8", "int64", "float64", "uint8", "uint32",
          "uint64"]


def _np(dtype):
    return pld.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


def _as_float(a):
    return pld.from_bfloat16(a) if a.dtype == np.uint16 else a.astype(np.float64)


def coll_kernel(out, data, rows, send, sig):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    d = data.numpy()
    one = pld.to_bfloat16(me + 1) if d.dtype == np.uint16 else me + 1
    d[...] = one
    pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max)
    out[0] = _as_float(d)[0, 0]
    d[...] = one
    assert pld.tensor.allreduce(data, sig) is data
    out[1] = _as_float(d)[0, 0]
    d[...] = one
    pld.tensor.broadcast(data, sig, root=n - 1, core_num=2)
    out[2] = _as_float(d)[0, 0]
    mine = np.full((1, N), one, d.dtype)
    pld.tensor.allgather(mine, rows, sig)
    out[3] = _as_float(rows.numpy()[:, 0]).sum()
    s = send.numpy()
    s[...] = (pld.to_bfloat16(10 * me + np.arange(n)[:, None]) if d.dtype == np.uint16
              else (10 * me + np.arange(n)[:, None]).astype(d.dtype))
    pld.tensor.all_to_all(send, rows, sig)
    out[4] = _as_float(rows.numpy()[:, 0]).sum()
    r = rows.numpy()
    r[...] = one
    pld.tensor.reduce_scatter(rows, sig, op=pld.ReduceOp.Sum)
    out[5] = _as_float(r)[me, 0]
    pld.tensor.barrier(sig)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_collectives(dtype):
    d = pld.dtype(_np(dtype))
    out = np.zeros((P, 6), np.float64)

    def orch(h, o):
        data = h.window(h.alloc_window_buffer((1, N), d, "data"), (1, N), d)
        rows = h.window(h.alloc_window_buffer((P, N), d, "rows"), (P, N), d)
        send = h.window(h.alloc_window_buffer((P, N), d, "send"), (P, N), d)
        sig = h.window(h.alloc_window_buffer((P, 2), pld.DType.INT32, "sig"), (P, 2), pld.DType.INT32)
        for r in range(P):
            h.dispatch(r, coll_kernel, o[r], data, rows, send, sig)

    pld.run(pld.DistributedConfig(device_ids=list(range(P))), orch, out)
    for me in range(P):
        assert out[me].tolist() == [P, P * (P + 1) / 2, P, P * (P + 1) / 2, sum(10 * s + me for s in range(P)),
                                    P * (P + 1) / 2]


def fill_kernel(w, value):
    w.numpy()[...] = value


def read_kernel(out, w):
    out[:w.shape[0]] = w.numpy()


def test_host_builtins():
    out = np.zeros((P, 3, P, N), np.float32)

    def orch(h, o):
        a = h.window(h.alloc_window_buffer((1, N), np.float32, "a"), (1, N), np.float32)
        rows = h.window(h.alloc_window_buffer((P, N), np.float32, "rows"), (P, N), np.float32)
        local = h.window(h.alloc_window_buffer((1, N), np.float32, "local"), (1, N), np.float32)
        sig = h.window(h.alloc_window_buffer((P, 1), pld.DType.INT32, "sig"), (P, 1), pld.DType.INT32)
        for r in range(P):
            h.dispatch(r, fill_kernel, a, r + 1.0)
            h.dispatch(r, fill_kernel, local, 10.0 * r)
        h.allreduce(a, op=pld.ReduceOp.Min)
        h.barrier()
        h.barrier(sig)
        h.barrier(domain=h.world())
        h.barrier(h.world())  # a domain by position, as for a signal
        with pytest.raises(pld.UsageError, match="a domain given twice"):
            h.barrier(h.world(), domain=h.world())
        h.allgather(local, rows, sig)
        for r in range(P):
            h.dispatch(r, read_kernel, o[r][0], a)
            h.dispatch(r, read_kernel, o[r][1], rows)
        h.broadcast(a, root=1)
        h.reduce_scatter(rows, sig, op=pld.ReduceOp.Max)
        for r in range(P):
            h.dispatch(r, read_kernel, o[r][2], rows)

    pld.run(pld.DistributedConfig(device_ids=list(range(P))), orch, out)
    for r in range(P):
        assert (out[r, 0, 0] == 1).all()
        assert out[r, 1, :, 0].tolist() == [0.0, 10.0, 20.0]
        assert out[r, 2, r, 0] == 10.0 * r


def test_host_all_to_all_and_v():
    out = np.zeros((2, 2, 4), np.int32)

    def orch(h, o):
        send = h.window(h.alloc_window_buffer((2, 4), np.int32, "send"), (2, 4), np.int32)
        recv = h.window(h.alloc_window_buffer((2, 4), np.int32, "recv"), (2, 4), np.int32)
        for r in range(2):
            h.dispatch(r, fill_kernel, send, r + 1)
        h.all_to_all(send, recv)
        for r in range(2):
            h.dispatch(r, read_kernel, o[r], recv)

    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch, out)
    assert out[0, :, 0].tolist() == [1, 2] and out[1, :, 0].tolist() == [1, 2]


def test_collective_bad_input():
    def orch(h):
        a = h.window(h.alloc_window_buffer((1, N), np.float32), (1, N), np.float32)
        b = h.window(h.alloc_window_buffer((1, N), np.int32), (1, N), np.int32)
        with pytest.raises(pld.UsageError, match="signal has dtype fp32"):
            h.allreduce(a, a)
        with pytest.raises(pld.UsageError, match="dtype"):
            h.allgather(b, a)
        with pytest.raises(pld.UsageError, match="root"):
            h.broadcast(a, root=7)
        with pytest.raises(pld.UsageError, match="core_num"):
            h.allreduce(a, core_num=99)
        with pytest.raises(pld.UsageError, match="send_counts and recv_counts"):
            h.all_to_all_v(a, a)
        with pytest.raises(pld.UsageError, match=r"Host.allreduce: op 'max' is not a pld.ReduceOp; pass one of "
                                                 r"pld.ReduceOp.Sum"):
            h.allreduce(a, op="max")
        with pytest.raises(pld.UsageError, match="mode 2 is not a pld.AllreduceMode"):
            h.allreduce(a, mode=2)

    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch)


def bad_coll_kernel(data, sig):
    pld.tensor.allreduce(data, sig, core_num=0)


def run_two_ranks(kernel):
    """kernel(data, sig) on two ranks: data a [1, N] float32 window, sig a [2, 1] signal."""
    def orch(h):
        data = h.window(h.alloc_window_buffer((1, N), np.float32), (1, N), np.float32)
        sig = h.window(h.alloc_window_buffer((2, 1), np.int32), (2, 1), np.int32)
        for r in range(2):
            h.dispatch(r, kernel, data, sig)

    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch)


def test_kernel_collective_bad_core_num():
    with pytest.raises(pld.RankError, match="core_num 0"):
        run_two_ranks(bad_coll_kernel)


def call_binding_kernel(data, sig):
    t = pld.tensor
    with pytest.raises(TypeError, match=r"broadcast\(\) takes at most 2 positional argument\(s\) \(3 given\); the call "
                                        r"is broadcast\(target, signal, \*, root, core_num\)"):
        t.broadcast(data, sig, 0)
    with pytest.raises(TypeError, match="allreduce.. got an unexpected keyword argument 'ops'"):
        t.allreduce(data, sig, ops=pld.ReduceOp.Max)
    with pytest.raises(TypeError, match="got multiple values for argument 'target'"):
        t.allreduce(data, sig, target=data)
    with pytest.raises(TypeError, match="all_to_all_v.. missing required argument 'recv_counts'"):
        t.all_to_all_v(data, data, sig, data)
    with pytest.raises(pld.UsageError, match="broadcast: root is a float; pass an int"):
        t.broadcast(data, sig, root=1.0)
    with pytest.raises(pld.UsageError, match="allreduce: reproducible is a int; pass True or False"):
        t.allreduce(data, sig, reproducible=1)
    with pytest.raises(pld.UsageError, match="allreduce: op 'max' is not a pld.ReduceOp"):
        t.allreduce(data, sig, op="max")
    with pytest.raises(pld.UsageError, match="does not fit an int"):
        t.broadcast(data, sig, root=1 << 40)
    d = data.numpy()
    d[...] = pld.rank(pld.get_comm_ctx(data)) + 1
    # keywords in any order; numpy integers where an int goes
    assert t.broadcast(data, sig, core_num=np.int64(1), root=np.int32(1)) is data
    assert d[0, 0] == 2
    t.allreduce(signal=sig, target=data, reproducible=True, op=pld.ReduceOp.Sum)
    assert d[0, 0] == 4
    assert t.barrier(signal=sig) is sig


def test_kernel_collective_call_binding():
    run_two_ranks(call_binding_kernel)
