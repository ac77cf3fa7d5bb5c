"""The remaining kernel-side calls: non-blocking puts and put_signal_nbi with quiet / fence,
tensor.remote_store, all_to_all_v in kernels and on the host, the bitwise and set atomics, and
remote_store of a tile's valid part."""
import numpy as np
import pytest

import pld

P = 2
R = 2  # rows per peer block of all_to_all_v
N = 4


def nbi_kernel(out, data, sig, cells):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    peer = 1 - me
    src = np.full((1, N), me + 1, np.float32)
    pld.tensor.put_nbi(data, peer, src)
    pld.system.fence()
    pld.tensor.put_signal_nbi(data, peer, src, (0, 0), (0, 0), (1, 1), sig, (me, 0), 1, pld.NotifyOp.AtomicAdd)
    pld.system.quiet()
    pld.system.wait(sig, (peer, 0), 1, pld.WaitCmp.Ge)
    out[0] = data.numpy()[0, N - 1]
    pld.tensor.barrier(sig)
    tile = np.full((1, N), 10 * (me + 1), np.float32)
    pld.tensor.remote_store(tile, data, peer, (0, 0))
    pld.tile.remote_store(np.full((1, N), 5, np.float32), data, peer, (0, 0), pld.AtomicType.Add, valid_shape=(1, 1))
    pld.tensor.barrier(sig)
    out[1] = data.numpy()[0, 0]
    out[2] = data.numpy()[0, 1]
    pld.system.atomic_set(cells, 0, (me,), 0b1111)
    pld.system.atomic_and(cells, 0, (me,), 0b0110)
    pld.system.atomic_xor(cells, 0, (me,), 0b0001)
    out[3] = pld.system.atomic_fetch_and(cells, 0, (me,), 0b0011)
    out[4] = pld.system.atomic_fetch_or(cells, 0, (me,), 0b1000)
    out[5] = pld.system.atomic_fetch_xor(cells, 0, (me,), 0b1000)
    out[6] = pld.system.atomic_fetch_inc(cells, 0, (me,))
    out[7] = pld.system.atomic_fetch(cells, 0, (me,))


def test_nbi_remote_store_and_atomics():
    out = np.zeros((P, 8), np.float64)

    def orch(h, o):
        data = h.window(h.alloc_window_buffer((1, N), np.float32, "data"), (1, N), np.float32)
        sig = h.window(h.alloc_window_buffer((P, 1), np.int32, "sig"), (P, 1), np.int32)
        cells = h.window(h.alloc_window_buffer((P,), np.uint64, "cells"), (P,), np.uint64)
        for r in range(P):
            h.dispatch(r, nbi_kernel, o[r], data, sig, cells)

    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch, out)
    for me in range(P):
        peer = 1 - me
        assert out[me, 0] == peer + 1
        assert out[me, 1] == 10 * (peer + 1) + 5 and out[me, 2] == 10 * (peer + 1)
        assert out[me, 3:].tolist() == [0b0111, 0b0011, 0b1011, 0b0011, 0b0100]


def a2av_kernel(out, send, recv, sig, recv_counts):
    ctx = pld.get_comm_ctx(send)
    me = pld.rank(ctx)
    s = send.numpy()
    for d in range(P):
        s[d * R:(d + 1) * R] = 100 * me + d
    counts = np.array([1 + (me + d) % R for d in range(P)], np.int32)
    pld.tensor.all_to_all_v(send, recv, sig, counts, recv_counts)
    out[...] = recv.numpy()[:, 0]


def test_all_to_all_v_kernel_and_host():
    out = np.zeros((P, 1, P * R), np.int32)
    host_out = np.zeros((P, 1, P * R), np.int32)

    def orch(h, o, ho):
        def view(name, shape, dt):
            return h.window(h.alloc_window_buffer(shape, dt, name), shape, dt)
        send = view("send", (P * R, N), np.int32)
        recv = view("recv", (P * R, N), np.int32)
        sig = view("sig", (P, 1), np.int32)
        rc = view("rc", (P, 1), np.int32)
        sc = view("sc", (P, 1), np.int32)
        for r in range(P):
            h.dispatch(r, a2av_kernel, o[r], send, recv, sig, rc)
        for r in range(P):
            h.dispatch(r, fill_counts, sc)
        h.all_to_all_v(send, recv, send_counts=sc, recv_counts=rc)
        for r in range(P):
            h.dispatch(r, read_rows, ho[r], recv)

    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch, out, host_out)
    for me in range(P):
        for s in range(P):
            n = 1 + (s + me) % R
            assert (out[me, 0, s * R:s * R + n] == 100 * s + me).all()
            assert (host_out[me, 0, s * R:s * R + R] == 100 * s + me).all()


def fill_counts(sc):
    sc.numpy()[...] = R


def read_rows(out, recv):
    out[...] = recv.numpy()[:, 0]


def a2av_int64_counts(send, recv, sig, recv_counts):
    counts = np.full(P, 1, np.int64)  # numpy's default integer: the error names it
    pld.tensor.all_to_all_v(send, recv, sig, counts, recv_counts)


def test_all_to_all_v_counts_of_another_dtype_are_named():
    def orch(h):
        def view(name, shape, dt):
            return h.window(h.alloc_window_buffer(shape, dt, name), shape, dt)
        send = view("send", (P * R, N), np.int32)
        recv = view("recv", (P * R, N), np.int32)
        sig = view("sig", (P, 1), np.int32)
        rc = view("rc", (P, 1), np.int32)
        for r in range(P):
            h.dispatch(r, a2av_int64_counts, send, recv, sig, rc)

    with pytest.raises(pld.RankError, match=r"all_to_all_v: send_counts is int64 \[2\]; it must be INT32 \[2\] or "
                                            r"\[2, 1\] \(convert the counts to int32\)"):
        pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch)
