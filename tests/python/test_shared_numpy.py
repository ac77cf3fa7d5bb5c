"""pld.shared_numpy(): numpy arrays allocated in shared memory reach the ranks without copies
(pld.run, DistributedWorker.run/submit, Host.dispatch); other arrays keep the copying path."""
import numpy as np
import pytest

import pld

CONFIG = pld.DistributedConfig(device_ids=[0, 1])


def fill(rows, value):
    rows[...] = value


def fill_each_rank(h, a):
    for r in range(h.world_size()):
        h.dispatch(r, fill, a[r], r + 1)


def test_large_arrays_are_shared_small_and_later_ones_are_not():
    name = np.core.multiarray.get_handler_name()
    with pld.shared_numpy():
        big = np.zeros((64, 1024), np.float32)  # 256 KiB
        small = np.ones(16, np.float32)
        empty = np.empty((1 << 14,), np.int64)  # 128 KiB, uninitialised
        assert np.core.multiarray.get_handler_name() == "pld_shared_numpy"
    assert np.core.multiarray.get_handler_name() == name  # restored on exit
    after = np.zeros((64, 1024), np.float32)
    assert pld.in_shared_memory(big) and pld.in_shared_memory(empty)
    assert not pld.in_shared_memory(small) and not pld.in_shared_memory(after)
    assert (big == 0).all()
    assert pld.in_shared_memory(big[3:9])  # a contiguous view
    assert not pld.in_shared_memory(big[:, 1:3])  # strided: the copying path
    assert pld.in_shared_memory(pld.HostTensor.zeros((4, 4)).numpy())
    assert not pld.in_shared_memory([1, 2, 3])
    with pld.shared_numpy(min_bytes=1):
        assert pld.in_shared_memory(np.ones(3, np.int32))


def test_unsupported_dtypes_and_bad_min_bytes():
    with pld.shared_numpy():
        c = np.zeros((1 << 14,), np.complex64)
    assert not pld.in_shared_memory(c)  # not a pld dtype: the copying path reports it
    with pytest.raises(pld.UsageError, match="complex"):
        pld.run(CONFIG, lambda h, t: None, c)
    with pytest.raises(pld.UsageError, match=r"pld.shared_numpy: min_bytes is 0; pass a positive number"):
        with pld.shared_numpy(min_bytes=0):
            pass


def test_resize_keeps_contents_and_memory_returns_for_reuse():
    with pld.shared_numpy():
        a = np.arange(1 << 15, dtype=np.float32)
        a.resize(1 << 16, refcheck=False)  # numpy's realloc through the handler
        assert pld.in_shared_memory(a) and a[(1 << 15) - 1] == (1 << 15) - 1
        for _ in range(50):  # freed blocks go back to the pool; nothing leaks a mapping per array
            b = np.ones((256, 256), np.float32)
            assert pld.in_shared_memory(b)
            del b


def test_run_passes_shared_arrays_without_copies():
    with pld.shared_numpy():
        a = np.zeros((2, 50000), np.float32)
    seen = []

    def orch(h, t):
        seen.append(type(t).__name__)
        fill_each_rank(h, t)

    pld.run(CONFIG, orch, a)
    assert seen == ["HostTensor"] and (a[0] == 1).all() and (a[1] == 2).all()
    ordinary = np.zeros((2, 50000), np.float32)
    pld.run(CONFIG, fill_each_rank, ordinary)  # copied in and back
    assert (ordinary[1] == 2).all()


def test_dispatch_takes_shared_rows_and_refuses_ordinary_arrays():
    with pld.shared_numpy():
        a = np.zeros((2, 50000), np.int32)
    pld.run(CONFIG, lambda h: fill_each_rank(h, a))  # a[r]: numpy views in shared memory
    assert (a[0] == 1).all() and (a[1] == 2).all()
    ordinary = np.zeros((2, 50000), np.int32)
    with pytest.raises(pld.UsageError, match=r"argument 0 is a numpy array in ordinary memory.*pld.shared_numpy"):
        pld.run(CONFIG, lambda h: fill_each_rank(h, ordinary))


def test_worker_run_and_submit_with_shared_arrays():
    with pld.shared_numpy():
        a = np.zeros((2, 50000), np.float32)
    with pld.DistributedWorker(CONFIG, fill_each_rank) as rt:
        rt(a)
        assert (a[1] == 2).all()
        a[...] = 0
        rt.submit(fill_each_rank, a).result()  # results land in the array itself
        assert (a[0] == 1).all() and (a[1] == 2).all()
        with pytest.raises(pld.UsageError, match=r"submit: argument 0 is a numpy array in ordinary memory"):
            rt.submit(fill_each_rank, np.zeros((2, 4), np.float32))
