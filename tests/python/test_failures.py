"""Rank failures reach the host as pld.RankError with the rank, the cause, the Python kernel's
name and its traceback; a rank that raises, calls os._exit or os.abort, or is killed leaves no
process and no shared memory behind (conftest's no_residue fixture checks every test)."""
import os
import signal

import numpy as np
import pytest

import pld


def raising_kernel(out, bad_rank):
    ctx_rank = int(out[0])
    if ctx_rank == bad_rank:
        raise ValueError("boom on purpose")


def exiting_kernel(out, how):
    if int(out[0]) == 1:
        if how == "exit":
            os._exit(3)
        if how == "abort":
            os.abort()
        os.kill(os.getpid(), signal.SIGKILL)


def waiting_kernel(out, sig):
    # rank 0 waits for a notify nobody sends: released when rank 1 fails
    if int(out[0]) == 0:
        pld.system.wait(sig, (0, 0), 1, pld.WaitCmp.Ge)
    else:
        raise RuntimeError("rank 1 fails")


def _ranks():
    return np.arange(2, dtype=np.float32).reshape(2, 1)


def test_kernel_exception_is_a_rank_error(config2):
    with pytest.raises(pld.RankError) as info:
        pld.run(config2, lambda h, t: [h.dispatch(r, raising_kernel, t[r], 1) for r in range(2)], _ranks())
    e = info.value
    assert e.rank == 1
    assert e.cause == pld.RankFailure.KernelError
    assert e.kernel.endswith("raising_kernel")
    assert "ValueError: boom on purpose" in str(e)
    assert e.traceback.startswith("Traceback (most recent call last):")
    assert "raise ValueError" in e.traceback
    assert isinstance(e, pld.Error)


@pytest.mark.parametrize("how", ["exit", "abort", "kill"])
def test_rank_death_is_a_rank_error(config2, how):
    with pytest.raises(pld.RankError) as info:
        pld.run(config2, lambda h, t: [h.dispatch(r, exiting_kernel, t[r], how) for r in range(2)], _ranks())
    assert info.value.rank == 1
    assert info.value.cause in (pld.RankFailure.Exited, pld.RankFailure.Crashed)


def test_waiting_rank_is_released(config2):
    def orch(h, t):
        sig = h.window(h.alloc_window_buffer((2, 1), pld.DType.INT32, "sig"), (2, 1), pld.DType.INT32)
        for r in range(2):
            h.dispatch(r, waiting_kernel, t[r], sig)

    with pytest.raises(pld.RankError) as info:
        pld.run(config2, orch, _ranks())
    assert info.value.rank == 1
    assert "rank 1 fails" in str(info.value)


def usage_kernel(sig):
    pld.system.notify(sig, 7, (0, 0), 1, pld.NotifyOp.Set)


def test_usage_error_in_a_kernel_names_op_value_and_fix(config2):
    def orch(h):
        sig = h.window(h.alloc_window_buffer((2, 1), pld.DType.INT32), (2, 1), pld.DType.INT32)
        for r in range(2):
            h.dispatch(r, usage_kernel, sig)

    with pytest.raises(pld.RankError, match="peer 7") as info:
        pld.run(config2, orch)
    assert "pld.UsageError" in str(info.value)


def timeout_kernel(sig):
    pld.system.wait(sig, (0, 0), 1, pld.WaitCmp.Eq)


def test_wait_timeout_is_reported():
    config = pld.DistributedConfig(device_ids=[0, 1], wait_timeout=0.5)

    def orch(h):
        sig = h.window(h.alloc_window_buffer((2, 1), pld.DType.INT32), (2, 1), pld.DType.INT32)
        for r in range(2):
            h.dispatch(r, timeout_kernel, sig)

    with pytest.raises(pld.RankError) as info:
        pld.run(config, orch)
    assert info.value.cause == pld.RankFailure.WaitTimeout


def test_run_again_after_failures(config2):
    out = np.zeros((2, 1), np.float32)
    pld.run(config2, lambda h, o: [h.dispatch(r, raising_kernel, o[r], 5) for r in range(2)], out)


def unknown_global_kernel(out):
    out[0] = 1


def test_lambda_kernel_runs_in_forked_ranks(config2):
    out = np.zeros((2, 1), np.float32)
    k = lambda o: o.__setitem__(0, 9)  # noqa: E731
    pld.run(config2, lambda h, o: [h.dispatch(r, k, o[r]) for r in range(2)], out)
    assert (out == 9).all()


def byte_signal_kernel(sig, next_buffer):
    pld.system.notify(sig, 0, (63,), 1, pld.NotifyOp.Set)


def test_a_signal_that_is_not_int32_is_refused_before_it_writes(config2):
    # A 64-element uint8 window passes the bounds check at (63,), but a cell is 4 bytes: the notify
    # must fail instead of writing into the next buffer.
    def orch(h):
        sig = h.window(h.alloc_window_buffer((64,), pld.DType.UINT8, "bytes"), (64,), pld.DType.UINT8)
        nxt = h.window(h.alloc_window_buffer((16,), pld.DType.UINT8, "next"), (16,), pld.DType.UINT8)
        for r in range(2):
            h.dispatch(r, byte_signal_kernel, sig, nxt)

    with pytest.raises(pld.RankError) as info:
        pld.run(config2, orch)
    assert "pld.UsageError: notify(signal 'bytes', offsets [63]): the signal is a uint8 view; signal cells " \
           "are INT32" in str(info.value)


def test_a_float_view_of_an_int32_buffer_is_refused(config2):
    def orch(h):
        h.window(h.alloc_window_buffer((4,), pld.DType.INT32, "sig"), (4,), pld.DType.FP32)

    with pytest.raises(pld.UsageError, match=r"window\('sig', \[4\], fp32\): the buffer was allocated as int32"):
        pld.run(config2, orch)
