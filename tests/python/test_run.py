"""pld.run: orchestrators, dispatch of Python kernels, numpy arrays and HostTensors as host
tensors, argument kinds, callbacks and the config's validation."""
import os
import select
import subprocess
import sys
import time

import numpy as np
import pytest

import pld


def fill_kernel(out, value):
    out[...] = value


def test_run_writes_numpy_results_back(config2):
    out = np.zeros((2, 1, 4), np.float32)

    def orch(h, o):
        assert h.world_size() == 2
        for r in range(h.world_size()):
            h.dispatch(r, fill_kernel, o[r], r + 1)

    pld.run(config2, orch, out)
    assert (out[0] == 1).all() and (out[1] == 2).all()


def test_run_with_host_tensor_is_zero_copy(config2):
    t = pld.HostTensor.zeros((2, 3), pld.DType.INT32)
    pld.run(config2, lambda h, x: [h.dispatch(r, fill_kernel, x[r], 5) for r in range(2)], t)
    assert (t.numpy() == 5).all()
    assert np.asarray(t).dtype == np.int32


def echo_kernel(out, a, b, c, d, e, f, g):
    assert a is None and b is True and c == -3 and d == 2.5 and e == "text"
    assert f == (1, [2, 3]) and g == {"k": 1}
    out[0] = 1


def test_argument_kinds(config2):
    out = np.zeros((2, 1), np.int64)

    def orch(h, o):
        for r in range(2):
            h.dispatch(r, echo_kernel, o[r], None, True, -3, 2.5, "text", (1, [2, 3]), {"k": 1})

    pld.run(config2, orch, out)
    assert (out == 1).all()


def enum_kernel(out, op, cmp, dt):
    assert op == pld.ReduceOp.Max and cmp == pld.WaitCmp.Ge and dt == pld.DType.BF16
    out[0] = 1


def test_enum_arguments(config2):
    out = np.zeros((2, 1), np.int32)
    pld.run(config2,
            lambda h, o: [h.dispatch(r, enum_kernel, o[r], pld.ReduceOp.Max, pld.WaitCmp.Ge, pld.DType.BF16)
                          for r in range(2)], out)
    assert (out == 1).all()


def test_callback_runs_between_dispatches(config2):
    out = np.zeros((2, 1), np.float32)
    seen = []

    def orch(h, o):
        for r in range(2):
            h.dispatch(r, fill_kernel, o[r], 3)
        h.callback(lambda x: seen.append(x.numpy().copy()), o)

    pld.run(config2, orch, out)
    assert len(seen) == 1 and (seen[0] == 3).all()


def test_bad_config():
    with pytest.raises(pld.UsageError, match="device_ids is empty"):
        pld.DistributedConfig(device_ids=[])
    with pytest.raises(pld.UsageError, match="appears twice"):
        pld.DistributedConfig(device_ids=[0, 0])
    with pytest.raises(pld.UsageError, match="config is a list"):
        pld.run([0, 1], lambda h: None)


def test_bad_dispatch(config2):
    with pytest.raises(pld.UsageError, match="rank 5 out of range"):
        pld.run(config2, lambda h: h.dispatch(5, fill_kernel, 0, 0))
    with pytest.raises(pld.UsageError, match="not callable"):
        pld.run(config2, lambda h: h.dispatch(0, 42))
    with pytest.raises(pld.UsageError, match="numpy array"):
        pld.run(config2, lambda h: [h.dispatch(r, fill_kernel, np.zeros(2), 1) for r in range(2)])
    with pytest.raises(pld.UsageError, match="rank 'a' is not an int"):
        pld.run(config2, lambda h: h.dispatch("a", fill_kernel))
    with pytest.raises(pld.UsageError, match="rank True is not an int"):
        pld.run(config2, lambda h: h.dispatch(True, fill_kernel))
    with pytest.raises(pld.UsageError, match=r"rank 1180591620717411303424 out of range \[0, 2\)"):
        pld.run(config2, lambda h: h.dispatch(2**70, fill_kernel))
    with pytest.raises(pld.UsageError, match=r"1 argument\(s\); pass dispatch\(rank, kernel, \*args\)"):
        pld.run(config2, lambda h: h.dispatch(0))
    with pytest.raises(TypeError, match="keyword"):
        pld.run(config2, lambda h: h.dispatch(rank=0, kernel=fill_kernel))


def test_dispatch_takes_numpy_integer_ranks(config2):
    out = np.zeros((2, 1, 4), np.float32)
    pld.run(config2, lambda h, o: [h.dispatch(r, fill_kernel, o[r], 7) for r in np.arange(2)], out)
    assert (out == 7).all()


def test_host_handle_dies_with_the_call(config2):
    kept = []
    pld.run(config2, lambda h: kept.append(h))
    with pytest.raises(pld.UsageError, match="has returned"):
        kept[0].world_size()


def test_orchestrator_exception_propagates(config2):
    def orch(h):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        pld.run(config2, orch)


def domain_kernel(out, data, sig):
    ctx = pld.get_comm_ctx(data)
    out[0] = pld.rank(ctx)
    out[1] = pld.nranks(ctx)
    pld.tensor.barrier(sig)


def test_sub_domain_and_alloc_forms():
    out = np.full((3, 2), -1, np.int64)

    def orch(h, o):
        pair = h.domain([0, 2])
        assert pair.size() == 2 and pair.ranks() == [0, 2]
        data = pair.window(pair.alloc_window_buffer(64, "pair_data"), (1, 16), np.float32)
        sig = pair.window(pair.alloc_window_buffer((2, 1), pld.DType.INT32, "sig"), (2, 1), pld.DType.INT32)
        assert h.alloc_window_buffer(256, "bytes").nbytes == 256
        assert h.alloc_window_buffer((4, 2), np.float16).nbytes == 16
        with pytest.raises(pld.UsageError, match="byte form takes no dtype"):
            h.alloc_window_buffer(16, np.float32)
        with pytest.raises(pld.UsageError, match="not a byte count"):
            h.alloc_window_buffer(1.5)
        with pytest.raises(pld.UsageError, match="heap"):
            h.alloc_window_buffer(1 << 50)
        for r in (0, 2):
            h.dispatch(r, domain_kernel, o[r], data, sig)

    pld.run(pld.DistributedConfig(device_ids=[0, 1, 2]), orch, out)
    assert out.tolist() == [[0, 2], [-1, -1], [1, 2]]


def printing_kernel(rank):
    print(f"kernel line from rank {rank}")


def test_prints_appear_once(capfd, config2):
    print("host line before the run", end="")
    pld.run(config2, lambda h: [h.dispatch(r, printing_kernel, r) for r in range(2)])
    out = capfd.readouterr().out
    assert out.count("host line before the run") == 1
    assert out.count("kernel line from rank 0") == 1 and out.count("kernel line from rank 1") == 1


LINES_SCRIPT = """
import os, sys, time
import pld

def kernel(rank, go):
    print(f"line from rank {rank} before its wait")
    print(f"partial from rank {rank}", end="")  # no newline: reaches the output when the rank exits
    while not os.path.exists(go):
        time.sleep(0.001)

def step(h, go):
    for r in range(2):
        h.dispatch(r, kernel, r, go)

with pld.DistributedWorker(pld.DistributedConfig(device_ids=[0, 1]), step) as rt:
    rt(sys.argv[1])
"""


def test_kernel_lines_appear_while_the_kernel_runs(tmp_path):
    """Output to a pipe (a log file, a pager): a kernel's lines arrive as it prints them, also when
    it then blocks; a partial line arrives when the rank process exits."""
    go = tmp_path / "go"
    script = tmp_path / "lines.py"
    script.write_text(LINES_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("PYTHONUNBUFFERED", None)  # Python's default: a pipe is block-buffered
    proc = subprocess.Popen([sys.executable, str(script), str(go)], stdout=subprocess.PIPE, env=env)
    try:
        seen, deadline = b"", time.monotonic() + 60
        while seen.count(b"before its wait\n") < 2:
            assert time.monotonic() < deadline, f"the kernels' lines did not arrive while they ran: {seen!r}"
            if select.select([proc.stdout], [], [], 0.1)[0]:
                chunk = os.read(proc.stdout.fileno(), 4096)
                assert chunk, f"the program ended before its kernels were released: {seen!r}"
                seen += chunk
        go.touch()
        out = (seen + proc.stdout.read()).decode()
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        proc.wait()
    for r in range(2):
        assert out.count(f"line from rank {r} before its wait\n") == 1
        assert out.count(f"partial from rank {r}") == 1


def test_callback_exception_fails_the_call(config2):
    def bad(_):
        raise LookupError("from the callback")

    def orch(h):
        h.dispatch(0, printing_kernel, 0)
        h.dispatch(1, printing_kernel, 1)
        h.callback(bad, 1)
        with pytest.raises(pld.UsageError, match="not callable"):
            h.callback(3)

    with pytest.raises(LookupError, match="from the callback"):
        pld.run(config2, orch)


def test_launcher_queries_on_shm():
    assert pld.launcher_world_size() == 0
    assert pld.is_output_rank()
    t = pld.HostTensor.arange((2, 3), np.int32)
    pld.gather(t)  # nothing to do on shm
    assert t.numpy().ravel().tolist() == list(range(6))
    assert pld.register_kernel(fill_kernel) == pld.register_kernel(fill_kernel)
    with pytest.raises(pld.UsageError, match="not callable"):
        pld.register_kernel(5)


def wrong_type_kernel(out):
    pld.tile.load([1, 2, 3], (0,), (1,))


def test_python_side_type_checks_name_op_value_and_fix(config2):
    with pytest.raises(pld.RankError, match=r"tile::load: src is a list; pass a numpy array"):
        pld.run(config2, lambda h, o: [h.dispatch(r, wrong_type_kernel, o[r]) for r in range(2)],
                np.zeros((2, 1)))


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    def kernel(self, out):
        out[...] = self.factor


def test_bound_method_kernels_share_one_id(config2):
    s = Scaler(4)
    assert pld.register_kernel(s.kernel) == pld.register_kernel(s.kernel)
    assert pld.register_kernel(s.kernel) != pld.register_kernel(Scaler(5).kernel)
    out = np.zeros((2, 1), np.float32)
    pld.run(config2, lambda h, o: [h.dispatch(r, s.kernel, o[r]) for r in range(2)], out)
    assert (out == 4).all()
