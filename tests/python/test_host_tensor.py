"""pld.HostTensor (shared memory, zero-copy numpy, slices, constructors on every dtype), dtype
conversions (numpy dtypes, names, pld.DType, bfloat16 as uint16) and shapes, with their bad input."""
import numpy as np
import pytest

import pld

ALL = [("float32", pld.DType.FP32), ("float16", pld.DType.FP16), ("uint16", pld.DType.BF16),
       ("int32", pld.DType.INT32), ("int16", pld.DType.INT16), ("int8", pld.DType.INT8), ("int64", pld.DType.INT64),
       ("float64", pld.DType.FP64), ("uint8", pld.DType.UINT8), ("uint32", pld.DType.UINT32),
       ("uint64", pld.DType.UINT64)]


@pytest.mark.parametrize("name,d", ALL)
def test_dtype_mapping(name, d):
    assert pld.dtype(np.dtype(name)) == d
    assert pld.dtype(getattr(np, name)) == d
    assert pld.dtype(d) == d
    assert pld.dtype(d.short_name) == d
    assert d.numpy == np.dtype(name)
    assert d.itemsize == np.dtype(name).itemsize


@pytest.mark.parametrize("name,d", ALL)
def test_host_tensor_every_dtype(name, d):
    t = pld.HostTensor.zeros((2, 3), d)
    a = t.numpy()
    assert a.shape == (2, 3) and a.dtype == np.dtype(name) and (a == 0).all()
    a[1, 2] = 5
    assert np.asarray(t)[1, 2] == 5  # the same memory
    assert np.frombuffer(memoryview(t), np.dtype(name))[5] == 5  # the buffer protocol, no copy
    s = t[1]
    assert s.shape == (3,) and s.numpy()[2] == 5 and t[-1].numpy()[2] == 5
    r = pld.HostTensor.arange((2, 3), d)
    got = pld.from_bfloat16(r.numpy()) if d == pld.DType.BF16 else r.numpy()
    assert got.ravel().tolist() == list(range(6))
    f = pld.HostTensor.full((4,), 2, d)
    got = pld.from_bfloat16(f.numpy()) if d == pld.DType.BF16 else f.numpy()
    assert (got == 2).all()
    rnd = pld.HostTensor.random((64,), d, seed=1)
    assert rnd.dtype == d and rnd.numel == 64


def test_from_numpy_copies_and_converts():
    src = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = pld.HostTensor.from_numpy(src)
    assert t.dtype == pld.DType.FP64 and t.shape == (2, 3)
    src[0, 0] = 9
    assert t.numpy()[0, 0] == 0
    h = pld.HostTensor.from_numpy(src, pld.DType.FP16)
    assert h.numpy().dtype == np.float16 and h.numpy()[1, 2] == 5
    assert len(t) == 2 and t.nbytes == 48 and t.ndim == 2 and "fp64" in repr(t)


def fill_rows(rows, value):
    rows[...] = value  # a kernel receives a HostTensor argument as a numpy view of its memory


def test_row_ranges_are_views_and_dispatch():
    t = pld.HostTensor.arange((6, 4), np.float32)
    mid = t[2:5]
    assert mid.shape == (3, 4) and mid.numpy()[0, 0] == 8 and mid.numpy()[2, 3] == 19
    mid.numpy()[0, 0] = -1
    assert t.numpy()[2, 0] == -1  # the same memory
    assert t[4:].shape == (2, 4) and t[:0].shape == (0, 4) and t[-2:].numpy()[0, 0] == 16
    assert t[5:99].shape == (1, 4)  # numpy's clamping
    with pytest.raises(pld.UsageError, match=r"HostTensor\[a:b:2\]: only contiguous row ranges"):
        t[::2]
    out = pld.HostTensor.zeros((5, 3), np.float32)

    def orch(h):
        h.dispatch(0, fill_rows, out[0:2], 1.0)
        h.dispatch(1, fill_rows, out[2:5], 2.0)

    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orch)
    assert (out.numpy()[:2] == 1).all() and (out.numpy()[2:] == 2).all()


def test_bfloat16_round_trip():
    values = np.array([0.0, 1.0, -2.5, 3.140625, 1e30, np.inf], np.float32)
    bits = pld.to_bfloat16(values)
    assert bits.dtype == pld.bfloat16
    assert (pld.from_bfloat16(bits) == pld.from_bfloat16(pld.to_bfloat16(pld.from_bfloat16(bits)))).all()
    assert (pld.from_bfloat16(bits)[:4] == values[:4]).all()
    assert np.isnan(pld.from_bfloat16(pld.to_bfloat16(np.float32("nan"))))
    assert pld.from_bfloat16(pld.to_bfloat16(np.float32(1.00390625))) == 1.0  # ties to even


def test_bad_input():
    with pytest.raises(pld.UsageError, match="not a pld element type"):
        pld.HostTensor.zeros((2,), np.complex64)
    with pytest.raises(pld.UsageError, match="not a pld element type"):
        pld.dtype("quaternion")
    with pytest.raises(pld.UsageError, match="not a tuple of ints"):
        pld.HostTensor.zeros("2x3")
    with pytest.raises(pld.UsageError, match="not a tuple of ints"):
        pld.HostTensor.zeros((2, 1.5))
    with pytest.raises(pld.UsageError):
        pld.HostTensor.zeros((2, -1))
    with pytest.raises(pld.UsageError, match="more than 8 dimensions"):
        pld.HostTensor.zeros((1,) * 9)
    with pytest.raises(pld.UsageError, match="out of range"):
        pld.HostTensor.zeros((2, 3))[2]
    seen = []
    pld.run(pld.DistributedConfig(device_ids=[0]), lambda h, x, y: seen.append((x, y)), [1, 2], 3.5)
    assert seen == [([1, 2], 3.5)]  # values other than arrays reach the orchestrator unchanged
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(pld.UsageError, match="read-only"):
        pld.run(pld.DistributedConfig(device_ids=[0]), lambda h, x: None, ro)


def test_errors_form_one_family():
    for cls in (pld.UsageError, pld.WaitTimeoutError, pld.AbortedError, pld.RankError):
        assert issubclass(cls, pld.Error)
    assert issubclass(pld.UsageError, ValueError)
    assert issubclass(pld.Error, Exception)
    assert pld.UsageError.__module__ == "pld"


def test_namespaces_and_docstrings():
    for ns, names in ((pld.system, ["notify", "wait", "signal_fetch", "test", "wait_until_any", "wait_until_all",
                                    "wait_until_some", "quiet", "fence", "atomic_fetch_add", "atomic_compare_swap",
                                    "get_comm_ctx", "rank", "nranks"]),
                      (pld.tile, ["load", "store", "read", "write", "remote_load", "remote_store", "add", "sub",
                                  "mul", "max", "min", "full"]),
                      (pld.tensor, ["put", "get", "remote_store", "put_signal", "put_nbi", "get_nbi",
                                    "put_signal_nbi", "barrier", "allreduce", "broadcast", "allgather",
                                    "reduce_scatter", "all_to_all", "all_to_all_v"])):
        for name in names:
            assert callable(getattr(ns, name)), name
            assert getattr(ns, name).__doc__, name
    assert "op" in pld.tensor.allreduce.__doc__


def test_kernel_calls_outside_a_kernel_fail_clearly():
    with pytest.raises(pld.UsageError):
        pld.system.quiet()
