"""pld.DistributedWorker: lifecycle, calls, resident tensors, persistent windows, recovery after a
rank failure (conftest.py checks that no process or /dev/shm entry is left behind)."""
import os
import signal
import time

import numpy as np
import pytest

import pld

P = 2


def config(n=P):
    return pld.DistributedConfig(device_ids=list(range(n)))


# ----- kernels and programs (module level, defined before any worker starts) -------------------

def write_value(out, value):
    out[...] = value


def fill(h, out, base):
    for r in range(h.world_size()):
        h.dispatch(r, write_value, out[r], base + r)


def empty_kernel():
    pass


def empty(h):
    for r in range(h.world_size()):
        h.dispatch(r, empty_kernel)


def fail_on(out, me, who, how):
    if me == who:
        if how == "raise":
            raise ValueError("failing on purpose")
        if how == "exit":
            os._exit(3)
        if how == "abort":
            os.abort()
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    out[...] = me + 1


def failing(h, out, who, how):
    for r in range(h.world_size()):
        h.dispatch(r, fail_on, out[r], r, who, how)


def add_one(t):
    t += 1


def bump_resident(h, t):
    h.dispatch(t.worker_id, add_one, t)


def bump_on(h, t, rank):
    h.dispatch(rank, add_one, t)


def bump_stacked(h, s):
    for shard in s:
        h.dispatch(shard.worker_id, add_one, shard)


def count_calls(counter, out):
    view = counter.numpy()
    view += 1
    out[...] = view[0]


def persistent_program(h, out):
    buf = h.alloc_window_buffer((1,), pld.DType.INT32, "counter")
    for r in range(h.world_size()):
        h.dispatch(r, count_calls, h.window(buf, (1,), pld.DType.INT32), out[r])


_background = {}  # per rank process: the thread start_background left running


def start_background(folder, me):
    """Starts a thread that outlives this kernel: it waits for the file 'go', then writes 'ran-<me>'."""
    import threading

    def body():
        while not os.path.exists(os.path.join(folder, "go")):
            time.sleep(0.001)
        open(os.path.join(folder, f"ran-{me}"), "w").close()

    _background["thread"] = threading.Thread(target=body)
    _background["thread"].start()


def join_background():
    _background.pop("thread").join()


def background(h, folder):
    for r in range(h.world_size()):
        h.dispatch(r, start_background, folder, r)


def joining(h):
    for r in range(h.world_size()):
        h.dispatch(r, join_background)


# ----- lifecycle -------------------------------------------------------------------------------

def test_run_and_close():
    out = pld.HostTensor.zeros((P, 4), pld.DType.INT32)
    with pld.DistributedWorker(config(), fill) as rt:
        assert rt.world_size() == P
        for i in range(3):
            rt(out, 10 * i)
            assert out.numpy().tolist() == [[10 * i] * 4, [10 * i + 1] * 4]
        rt.run(fill, out, 7)
        assert out.numpy()[1, 0] == 8
    with pytest.raises(pld.UsageError, match="close"):
        rt.run(fill, out, 0)
    rt.close()  # idempotent


def keep_host(h, kept, out, value):
    kept.append(h)
    fill(h, out, value)


def test_a_thread_a_kernel_left_running_runs_between_calls(tmp_path):
    """A rank keeps the GIL between kernels only while no other Python thread exists: a thread a
    kernel started runs while the rank waits for its next dispatch."""
    with pld.DistributedWorker(config(), [background, joining]) as rt:
        rt.run(background, str(tmp_path))
        (tmp_path / "go").touch()
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ran-{r}").exists() for r in range(P)):  # no kernel runs meanwhile
            assert time.monotonic() < deadline, "the kernels' threads did not run between calls"
            time.sleep(0.001)
        rt.run(joining)


def test_a_kept_host_handle_stays_dead_in_later_calls():
    out = pld.HostTensor.zeros((P, 4), pld.DType.INT32)
    kept = []
    with pld.DistributedWorker(config(), keep_host) as rt:
        for i in range(3):
            rt(kept, out, i)
        assert out.numpy()[0, 0] == 2
    assert len({id(h) for h in kept}) == 3  # each call's handle is its own
    for h in kept:
        with pytest.raises(pld.UsageError, match="has returned"):
            h.world_size()


def test_several_programs_and_unregistered_program():
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    with pld.DistributedWorker(config(), [fill, empty]) as rt:
        rt.run(empty)
        rt.run(fill, out, 5)
        assert out.numpy().ravel().tolist() == [5, 6]
        with pytest.raises(pld.UsageError, match="not registered"):
            rt.run(persistent_program, out)
        with pytest.raises(pld.UsageError, match="programs"):
            rt(out, 1)


def test_bad_programs():
    with pytest.raises(pld.UsageError, match="programs"):
        pld.DistributedWorker(config(), 42)
    with pytest.raises(pld.UsageError, match="not callable"):
        pld.DistributedWorker(config(), [fill, 3])
    with pytest.raises(pld.UsageError, match="reset_persistent_windows"):
        pld.DistributedWorker(config(), fill, reset_persistent_windows=True)


def test_submit_result_done():
    outs = [pld.HostTensor.zeros((P, 2), pld.DType.FP32) for _ in range(3)]
    with pld.DistributedWorker(config(), fill) as rt:
        handles = [rt.submit(fill, out, i) for i, out in enumerate(outs)]
        for h in handles:
            h.result(timeout=120)
            assert h.done()
            assert h.wait(0)
        for i, out in enumerate(outs):
            assert out.numpy()[:, 0].tolist() == [i, i + 1]
        with pytest.raises(pld.UsageError, match="timeout"):
            handles[0].result(timeout=-1)


def test_benchmark():
    with pld.DistributedWorker(config(), empty) as rt:
        stats = rt.benchmark(empty, rounds=5, warmup=1)
        assert stats.rounds == 5 and stats.warmup == 1
        assert stats.total.min <= stats.total.median <= stats.total.max
        with pytest.raises(pld.UsageError, match="rounds"):
            rt.benchmark(empty, rounds=0)


# ----- resident tensors ------------------------------------------------------------------------

def test_resident_tensor():
    with pld.DistributedWorker(config(), [bump_resident, bump_stacked, bump_on]) as rt:
        t = rt.alloc_tensor((2, 3), np.float32, worker_id=1, init=np.arange(6))
        with pytest.raises(pld.UsageError, match="rank 1"):
            rt.run(bump_on, t, 0)  # resident tensors never move
        assert t.shape == (2, 3) and t.worker_id == 1 and t.live
        rt.run(bump_resident, t)
        rt.run(bump_on, t, 1)
        np.testing.assert_array_equal(rt.copy_from(t), np.arange(6).reshape(2, 3) + 2)
        with pld.DistributedWorker(config(), bump_resident) as other:
            with pytest.raises(pld.UsageError, match="another DistributedWorker"):
                other.run(bump_resident, t)
        rt.copy_to(t, np.full((2, 3), 5, np.float32))
        out = np.empty((2, 3), np.float32)
        assert rt.copy_from(t, out) is out
        assert (out == 5).all()
        z = rt.alloc_tensor(np.arange(4, dtype=np.int64), worker_id=0)
        assert z.dtype == pld.DType.INT64
        np.testing.assert_array_equal(rt.copy_from(z), np.arange(4))
        with pytest.raises(pld.UsageError):
            rt.copy_to(t, np.zeros(5, np.float32))
        with pytest.raises(pld.UsageError):
            rt.copy_from(t, np.empty((2, 3), np.float64))
        rt.free_tensor(t)
        assert not t.live
        with pytest.raises(pld.UsageError, match="freed"):
            rt.copy_from(t)
        with pytest.raises(pld.UsageError):
            rt.alloc_tensor((4,), np.float32, worker_id=P)


def test_stacked_tensor():
    host = np.arange(2 * 3, dtype=np.int32).reshape(2, 3)
    with pld.DistributedWorker(config(), [bump_resident, bump_stacked]) as rt:
        s = rt.alloc_stacked_tensor(host)
        assert len(s) == 2 and s.full_shape == (2, 3) and s.worker_ids == (0, 1)
        assert s[1].worker_id == 1
        rt.run(bump_stacked, s)
        np.testing.assert_array_equal(rt.copy_stacked_from(s), host + 1)
        rt.free_stacked_tensor(s)
        with pytest.raises(pld.UsageError):
            rt.alloc_stacked_tensor(host, worker_ids=[0])
        with pytest.raises(pld.UsageError):
            s[5]


# ----- persistent windows ----------------------------------------------------------------------

def test_persistent_windows_keep_contents():
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    with pld.DistributedWorker(config(), persistent_program, persistent=True,
                               reset_persistent_windows=False) as rt:
        assert rt.persistent and rt.reset_persistent_windows is False
        for i in range(3):
            rt(out)
            assert out.numpy().ravel().tolist() == [i + 1] * P
    with pld.DistributedWorker(config(), persistent_program, persistent=True) as rt:
        for _ in range(2):
            rt(out)
            assert out.numpy().ravel().tolist() == [1] * P  # zeroed before each reuse


# ----- rank failures and recovery --------------------------------------------------------------

@pytest.mark.parametrize("how", ["raise", "exit", "abort", "kill"])
def test_recovers_after_rank_failure(how):
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    with pld.DistributedWorker(config(), [failing, fill]) as rt:
        with pytest.raises(pld.RankError) as info:
            rt.run(failing, out, 1, how)
        assert info.value.rank == 1
        if how == "raise":
            assert info.value.kernel is not None and "fail_on" in info.value.kernel
            assert "failing on purpose" in str(info.value)
            assert "ValueError" in (info.value.traceback or "")
        for _ in range(2):  # the worker recovered: the next calls run normally
            rt.run(fill, out, 3)
            assert out.numpy().ravel().tolist() == [3, 4]
        handle = rt.submit(failing, out, 0, how)
        with pytest.raises(pld.RankError):
            handle.result()
        assert handle.done()
        rt.run(failing, out, -1, how)
        assert out.numpy().ravel().tolist() == [1, 2]


def test_resident_tensor_lost_with_its_rank():
    with pld.DistributedWorker(config(), [failing, bump_resident]) as rt:
        out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
        t = rt.alloc_tensor((4,), np.float32, worker_id=1)
        with pytest.raises(pld.RankError):
            rt.run(failing, out, 1, "exit")
        assert not t.live
        with pytest.raises(pld.Error, match="lost"):
            rt.copy_from(t)


def test_no_recovery_breaks_the_worker():
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    with pld.DistributedWorker(config(), [failing, fill], recovery=False) as rt:
        with pytest.raises(pld.RankError):
            rt.run(failing, out, 0, "exit")
        with pytest.raises(pld.Error, match="broken"):
            rt.run(fill, out, 0)


# ----- which kernels a fork-once worker can run ------------------------------------------------

def dispatch_given(h, kernel, out):
    for r in range(h.world_size()):
        h.dispatch(r, kernel, out[r], r)


def test_kernel_defined_after_start_fails_clearly():
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    late = lambda o, v: write_value(o, v)  # noqa: E731 - created after the worker forked
    with pld.DistributedWorker(config(), dispatch_given) as rt:
        with pytest.raises(pld.RankError, match="lambda"):
            rt.run(dispatch_given, late, out)
        rt.run(dispatch_given, write_value, out)  # still usable
        assert out.numpy().ravel().tolist() == [0, 1]


def test_kernels_registered_before_start():
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    offset = 40
    early = lambda o, v: write_value(o, v + offset)  # noqa: E731
    with pld.DistributedWorker(config(), dispatch_given, kernels=[early]) as rt:
        rt.run(dispatch_given, early, out)
        assert out.numpy().ravel().tolist() == [40, 41]
    with pytest.raises(pld.UsageError, match="not callable"):
        pld.DistributedWorker(config(), dispatch_given, kernels=[1])


def test_numpy_arrays_as_host_tensors():
    out = np.zeros((P, 3), np.int32)
    with pld.DistributedWorker(config(), fill) as rt:
        rt.run(fill, out, 20)  # copied into shared memory and back, as pld.run does
        assert out[:, 0].tolist() == [20, 21]
        rt(out, 30)
        assert out[:, 2].tolist() == [30, 31]
        with pytest.raises(pld.UsageError, match="numpy array"):
            rt.submit(fill, out, 0)
        with pytest.raises(pld.UsageError, match="read-only"):
            rt.run(fill, read_only(out), 0)


def read_only(array):
    view = array.view()
    view.flags.writeable = False
    return view
