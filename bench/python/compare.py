#!/usr/bin/env python3
"""Python vs C++ speed of pld, side by side in one run, at P=2:

  allreduce   a Python kernel looping pld.tensor.allreduce on 1 MiB fp32 (busbw) vs pld-bench's
              composite path (pld::tensor::allreduce in a C++ kernel)       target: >= 0.9x
  all_to_all  the same for pld.tensor.all_to_all, [P, SIZE] = 1 MiB per rank  target: >= 0.9x
  latency     notify -> wait ping-pong written in Python, one-way, vs the one pld-bench --op p2p
              prints                                                         target: <= 5x
  dispatch    rt() of a DistributedWorker dispatching an empty Python kernel to every rank vs
              pld-bench-worker's rt.run(empty kernel), at P = 2, 4 and 8: the median of calls
              timed one by one on both sides                                 target: <= 1.5x

Both sides time the same way: collectives as the max over ranks of the loop time / iterations
after warm-up calls and a barrier; the ping-pong as half a round trip (Set i / wait >= i, values
only grow). Each measurement alternates C++ and Python `--repeats` times; medians are compared.
A benchmark, not a test: it exits 0 whatever the ratios are (2 when a run fails).

  cmake --preset release && cmake --build build-release -j2 --target _pld pld-bench pld-bench-worker
  PYTHONPATH=build-release/python /usr/bin/python3 bench/python/compare.py --build build-release
  ... compare.py --build build --quick          # a short smoke run
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pld

P = 2
MIB = 1 << 20


# ----- Python side: kernels (module level, so a DistributedWorker's ranks find them) ------------

def collective_kernel(name, data, aux, sig, out, iters, warmup):
    """Times `iters` calls of one collective after `warmup` calls and a barrier."""
    if name == "allreduce":
        call = lambda: pld.tensor.allreduce(data, sig)  # noqa: E731
    else:
        call = lambda: pld.tensor.all_to_all(aux, data, sig)  # noqa: E731
    for _ in range(warmup):
        call()
    pld.tensor.barrier(sig)
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    out[0] = time.perf_counter() - t0


def collective_program(h, name, out, iters, warmup):
    n = h.world_size()
    shape = (MIB // 4,) if name == "allreduce" else (n, MIB // 4 // n)
    data = h.alloc_window_buffer(shape, pld.DType.FP32, "data")
    aux = h.alloc_window_buffer(shape, pld.DType.FP32, "aux")
    sig = h.alloc_window_buffer((n, 1), pld.DType.INT32, "sig")
    for r in range(n):
        h.dispatch(r, collective_kernel, name, h.window(data, shape, pld.DType.FP32),
                   h.window(aux, shape, pld.DType.FP32), h.window(sig, (n, 1), pld.DType.INT32), out[r], iters,
                   warmup)


def ping_pong_kernel(ping, sig, out, iters, warmup):
    """Rank 0 sets rank 1's cell to i and waits for its own to reach i; rank 1 answers."""
    me = pld.rank(pld.get_comm_ctx(sig))
    notify, wait = pld.system.notify, pld.system.wait
    cell, set_op, ge = (0, 0), pld.NotifyOp.Set, pld.WaitCmp.Ge
    pld.tensor.barrier(sig)
    t0 = time.perf_counter()
    for i in range(1, warmup + iters + 1):
        if i == warmup + 1:
            t0 = time.perf_counter()
        if me == 0:
            notify(ping, 1, cell, i, set_op)
            wait(ping, cell, i, ge)
        elif me == 1:
            wait(ping, cell, i, ge)
            notify(ping, 0, cell, i, set_op)
    out[0] = time.perf_counter() - t0


def ping_pong_program(h, out, iters, warmup):
    n = h.world_size()
    ping = h.alloc_window_buffer((1, 1), pld.DType.INT32, "ping")
    sig = h.alloc_window_buffer((n, 1), pld.DType.INT32, "sig")
    for r in range(n):
        h.dispatch(r, ping_pong_kernel, h.window(ping, (1, 1), pld.DType.INT32),
                   h.window(sig, (n, 1), pld.DType.INT32), out[r], iters, warmup)


def empty_kernel():
    pass


def empty_program(h):
    for r in range(h.world_size()):
        h.dispatch(r, empty_kernel)


def config():
    return pld.DistributedConfig(device_ids=list(range(P)), heap_bytes=64 * MIB)


def py_collective(name, iters, warmup):
    out = pld.HostTensor.zeros((P, 1), pld.DType.FP64)
    pld.run(config(), lambda h, o: collective_program(h, name, o, iters, warmup), out)
    seconds = float(out.numpy().max()) / iters
    factor = 2 * (P - 1) / P if name == "allreduce" else (P - 1) / P
    return MIB / seconds / 1e9 * factor  # busbw, GB/s


def py_latency(iters, warmup):
    out = pld.HostTensor.zeros((P, 1), pld.DType.FP64)
    pld.run(config(), lambda h, o: ping_pong_program(h, o, iters, warmup), out)
    return float(out.numpy()[0, 0]) / iters / 2 * 1e6  # one way, us


def py_dispatch(worker, rounds, warmup):
    for _ in range(warmup):
        worker()
    calls = []
    clock = time.perf_counter
    for _ in range(rounds):
        t0 = clock()
        worker()
        calls.append(clock() - t0)
    return statistics.median(calls) * 1e6  # us


# ----- C++ side: the project's own tools -------------------------------------------------------

def run_tool(args, json_path):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"compare.py: {' '.join(args)} failed ({result.returncode}):\n{result.stderr}{result.stdout}")
    with open(json_path) as f:
        return json.load(f)


def cpp_collective(tools, name, iters, warmup, tmp):
    path = os.path.join(tmp, f"{name}.json")
    j = run_tool([tools["pld-bench"], "--op", name, "-g", str(P), "-b", "1M", "-e", "1M", "-n", str(iters), "-w",
                  str(warmup), "-c", "0", "--path", "composite", "--progress", "never", "-J", path], path)
    return j["tables"][0]["rows"][0]["composite"]["busbw"]


def cpp_latency(tools, tmp):
    path = os.path.join(tmp, "p2p.json")
    j = run_tool([tools["pld-bench"], "--op", "p2p", "-g", str(P), "-b", "4K", "-e", "4K", "-c", "0", "--progress",
                  "never", "-J", path], path)
    return j["p2p_latency"]["notify_wait_us"]


def cpp_dispatch(tools, ranks, rounds, warmup, tmp):
    path = os.path.join(tmp, "worker.json")
    j = run_tool([tools["pld-bench-worker"], "-g", str(ranks), "--rounds", str(rounds), "--warmup", str(warmup),
                  "--oneshot", "1", "--calls", "2", "--work-us", "1", "--repeats", "1", "--json", path], path)
    return j["run_p50_us"]


# ----- driver -------------------------------------------------------------------------------

def find_tools(build):
    tools = {"pld-bench": os.path.join(build, "tools", "pld-bench", "pld-bench"),
             "pld-bench-worker": os.path.join(build, "bench", "worker", "pld-bench-worker")}
    for name, path in tools.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"compare.py: {path} not found; build it: cmake --build {build} --target {name}")
    return tools


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-release", help="the CMake build tree with the tools and the package")
    ap.add_argument("--repeats", type=int, default=3, help="alternate C++ and Python this many times")
    ap.add_argument("--iters", type=int, default=500, help="timed collective calls per measurement")
    ap.add_argument("--lat-iters", type=int, default=20000, help="timed ping-pong round trips")
    ap.add_argument("--rounds", type=int, default=2000, help="timed empty dispatches")
    ap.add_argument("--quick", action="store_true", help="one short repeat (a smoke run; numbers are noisy)")
    ap.add_argument("--json", help="also write the results as JSON")
    o = ap.parse_args()
    if o.quick:
        o.repeats, o.iters, o.lat_iters, o.rounds = 1, 20, 500, 50
    if min(o.repeats, o.iters, o.lat_iters, o.rounds) < 1:
        sys.exit("compare.py: --repeats, --iters, --lat-iters and --rounds must be >= 1")
    tools = find_tools(o.build)
    warmup, lat_warmup, rounds_warmup = max(5, o.iters // 10), max(10, o.lat_iters // 10), max(5, o.rounds // 10)

    dispatch_ranks = (2, 4, 8)
    keys = ["allreduce", "all_to_all", "latency"] + [f"dispatch{n}" for n in dispatch_ranks]
    samples = {k: ([], []) for k in keys}  # (C++, Python)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(o.repeats):
            for name in ("allreduce", "all_to_all"):
                samples[name][0].append(cpp_collective(tools, name, o.iters, warmup, tmp))
                samples[name][1].append(py_collective(name, o.iters, warmup))
            samples["latency"][0].append(cpp_latency(tools, tmp))
            samples["latency"][1].append(py_latency(o.lat_iters, lat_warmup))
            for n in dispatch_ranks:
                samples[f"dispatch{n}"][0].append(cpp_dispatch(tools, n, o.rounds, rounds_warmup, tmp))
                with pld.DistributedWorker(pld.DistributedConfig(device_ids=list(range(n))), empty_program) as w:
                    samples[f"dispatch{n}"][1].append(py_dispatch(w, o.rounds, rounds_warmup))

    rows = [  # name, unit, ratio = python / C++, target, higher is better
        ("allreduce 1 MiB fp32 busbw", "GB/s", "allreduce", 0.9, True),
        ("all_to_all 1 MiB fp32 busbw", "GB/s", "all_to_all", 0.9, True),
        ("notify->wait one-way latency", "us", "latency", 5.0, False),
    ] + [(f"DistributedWorker rt(), empty, P={n}", "us", f"dispatch{n}", 1.5, False) for n in dispatch_ranks]
    print(f"pld Python vs C++ at P={P} (dispatch: P as given), {o.repeats} repeat(s), medians\n")
    print(f"{'measurement':<38} {'unit':>5} {'C++':>10} {'Python':>10} {'ratio':>7}  target")
    results = []
    for label, unit, key, target, higher in rows:
        cpp, py = (statistics.median(v) for v in samples[key])
        ratio = py / cpp if cpp else float("inf")
        ok = ratio >= target if higher else ratio <= target
        sign = ">=" if higher else "<="
        print(f"{label:<38} {unit:>5} {cpp:>10.3f} {py:>10.3f} {ratio:>6.2f}x  {sign} {target}x "
              f"{'PASS' if ok else 'MISS'}")
        results.append({"measurement": key, "unit": unit, "cpp": samples[key][0], "python": samples[key][1],
                        "cpp_median": cpp, "python_median": py, "ratio": ratio, "target": target, "pass": ok})
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"tool": "bench/python/compare.py", "ranks": P, "repeats": o.repeats, "iters": o.iters,
                       "lat_iters": o.lat_iters, "rounds": o.rounds, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
