"""pld.TaskGraph: dependencies, errors, defer_wait inside a kernel, and swimlanes through
DistributedConfig."""
import os
import threading

import pytest

import pld

P = 2


def ordered_kernel(out):
    done = []
    lock = threading.Lock()

    def step(name):
        def body():
            with lock:
                done.append(name)
        return body

    g = pld.TaskGraph(2, "order")
    a = g.add("a", step("a"))
    b = g.add("b", step("b"), [a])
    c = g.add("c", step("c"), (a,))
    d = g.add("d", step("d"), [b, c])
    assert len(g) == 4 and a.value == 0 and d.value == 3 and b != c
    g.run()
    out[...] = [ord(x) for x in done]


def ordered(h, out):
    for r in range(h.world_size()):
        h.dispatch(r, ordered_kernel, out[r])


def test_dependencies_order_tasks():
    # Graphs with several threads run inside kernels: the threads belong to the process that runs
    # the graph (here a rank), and a process forks its ranks without them.
    out = pld.HostTensor.zeros((P, 4), pld.DType.INT32)
    pld.run(pld.DistributedConfig(device_ids=list(range(P))), ordered, out)
    for row in out.numpy():
        done = "".join(chr(v) for v in row)
        assert sorted(done) == list("abcd") and done[0] == "a" and done[-1] == "d"


def test_task_error_propagates_and_skips_dependants():
    ran = []
    g = pld.TaskGraph(1)
    bad = g.add("bad", lambda: (_ for _ in ()).throw(KeyError("task failed on purpose")))
    g.add("after", lambda: ran.append(1), [bad])
    with pytest.raises(KeyError, match="on purpose"):
        g.run()
    assert ran == []
    with pytest.raises(pld.UsageError, match="already ran"):
        g.run()


def test_bad_input():
    g = pld.TaskGraph()
    with pytest.raises(pld.UsageError, match="not callable"):
        g.add("x", 5)
    with pytest.raises(pld.UsageError, match="TaskId"):
        g.add("x", lambda: None, [0])
    with pytest.raises(pld.UsageError):
        pld.TaskGraph(0)
    with pytest.raises(pld.UsageError):
        pld.TaskGraph(-1)
    with pytest.raises(pld.UsageError):
        pld.TaskGraph(pld.kMaxTaskThreads + 1)


def test_defer_wait_outside_a_task_is_refused():
    def orchestrator(h):
        buf = h.alloc_window_buffer((h.world_size(), 1), pld.DType.INT32, "sig")
        for r in range(h.world_size()):
            h.dispatch(r, defer_outside_task, h.window(buf, (h.world_size(), 1), pld.DType.INT32))
    with pytest.raises(pld.RankError, match="TaskGraph"):
        pld.run(pld.DistributedConfig(device_ids=list(range(P))), orchestrator)


def defer_outside_task(sig):
    pld.system.defer_wait(sig, (0, 0), 1)


def exchange_kernel(sig, out):
    ctx = pld.get_comm_ctx(sig)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    peer, source = (me + 1) % n, (me - 1) % n
    seen = []
    g = pld.TaskGraph(2, "exchange")
    recv = g.add("await", lambda: pld.system.defer_wait(sig, (source, 0), 1))
    g.add("use", lambda: seen.append(int(sig.numpy()[source, 0])), [recv])
    g.add("send", lambda: pld.system.notify(sig, peer, (me, 0), 1, pld.NotifyOp.AtomicAdd))
    g.run()
    out[...] = seen[0] + 10 * me


def exchange(h, out):
    n = h.world_size()
    buf = h.alloc_window_buffer((n, 1), pld.DType.INT32, "sig")
    for r in range(n):
        h.dispatch(r, exchange_kernel, h.window(buf, (n, 1), pld.DType.INT32), out[r])


def test_defer_wait_completes_the_waiter_task():
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    pld.run(pld.DistributedConfig(device_ids=list(range(P))), exchange, out)
    assert out.numpy().ravel().tolist() == [1 + 10 * r for r in range(P)]


def test_task_graph_in_a_worker():
    out = pld.HostTensor.zeros((3, 1), pld.DType.INT32)
    with pld.DistributedWorker(pld.DistributedConfig(device_ids=[0, 1, 2]), exchange) as rt:
        for _ in range(2):
            rt(out)
            assert out.numpy().ravel().tolist() == [1, 11, 21]


def test_swimlane_through_config(tmp_path):
    out = pld.HostTensor.zeros((P, 1), pld.DType.INT32)
    config = pld.DistributedConfig(device_ids=list(range(P)), swimlane=True, dfx_dir=str(tmp_path))
    assert config.swimlane and config.dfx_dir == str(tmp_path)
    pld.run(config, exchange, out)
    written = [f for _, _, files in os.walk(tmp_path) for f in files]
    assert written, "swimlane=True wrote no trace into dfx_dir"
