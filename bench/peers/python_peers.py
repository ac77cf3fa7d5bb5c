#!/usr/bin/env python3
"""pld's Python collectives next to mpi4py and torch.distributed (gloo), side by side in one run:
per-call time of allreduce, broadcast, allgather, all_to_all, all_to_all_v (float32, sum) and
barrier at P = 2 and 4 ranks, sizes 4 B to 64 MiB (factor 4).

  pld         a Python kernel in every rank loops pld.tensor.<collective> (pld.run, one dispatch
              per rank and size), as bench/python/compare.py does
  pld-host    the orchestrator records one host builtin (h.allreduce, h.broadcast, ...) per
              iteration; every rank stamps its clock before and after the recorded loop (pld.run
              records the whole program before the ranks run it, so the loop is timed in the ranks,
              as pld-bench's builtin path does)
  mpi4py      this script under mpirun (btl self,vader): numpy buffers and the buffer API,
              Allreduce(IN_PLACE), Bcast, Allgather, Alltoall, Alltoallv, Barrier
  torch-gloo  P processes of this script, torch.distributed on gloo (a file:// store), CPU tensors:
              all_reduce, broadcast, all_gather (all_gather_into_tensor where gloo has it, else
              into the rows of the target), all_to_all_single (split sizes for all_to_all_v),
              barrier; one thread per process

Every side times alike: per-call time is the max over ranks of (loop time / iterations) after
warm-up calls and a barrier. Iterations are --budget / size in [--min-iters, --max-iters], warm-up
calls iterations / 10 (at least 5; a process's first row warms up as long as it times), the same
on every side. Sizes follow pld-bench: the bytes of one rank's buffer in whole elements; allgather
(its gathered target), all_to_all and all_to_all_v work on [P, SIZE / P] buffers, the size rounded
down to whole elements per rank (at least one); all_to_all_v sends one full row to every peer (pld-bench's counts), so it moves
what all_to_all moves (pld's also delivers the receive counts; mpi4py and torch take them as
arguments). Barrier has one row, size 0. After the loop every side stages its inputs again, runs
the collective once and checks the result (small integers, exact in fp32; a barrier: no rank
leaves before the last one entered); a wrong value fails the side.

Each side runs in processes of its own (python_sides.py holds their code), one run per side and P
covering every op and size; --rounds repeats the runs, the sides interleaved (their order rotating
per round), and the table shows medians over rounds with pld / min(mpi4py, torch-gloo). --out gets
one JSON line per measurement. A benchmark, not a test: it exits 0 whatever the ratios are (2 when
a side fails, with its stderr tail).

  cmake --build build-release -j2 --target _pld
  PYTHONPATH=build-release/python /usr/bin/python3 bench/peers/python_peers.py --out peers.jsonl
  ... python_peers.py --quick                          # a smoke run of every side (seconds)
  ... python_peers.py --ranks 2 --ops allreduce,all_to_all -b 1K -e 1M --rounds 3
"""
import argparse
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import python_sides as sides_
from python_sides import OPS, PEERS, SIDES


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    scale = units.get(t[-1:], 1)
    return int(float(t[:-1] if t[-1:] in units else t) * scale)


class SideFailed(Exception):
    pass


def child_env():
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    return env


def plan_args(o):
    return ["--ops", ",".join(o.ops), "--sizes", ",".join(map(str, o.sizes)), "--budget", str(o.budget),
            "--min-iters", str(o.min_iters), "--max-iters", str(o.max_iters), "--iters", str(o.iters)]


def tail(path, lines=20):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def stop(procs):
    """Ends the process groups of the children still running (SIGTERM, then SIGKILL after 5 s)."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    for p in live:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def run_side(side, n, o, tmp, run_id):
    """Runs one side at P = n over every row; returns its measurements (and notes) as dicts."""
    me = [sys.executable, os.path.abspath(__file__), "--side", side, "--ranks", str(n)] + plan_args(o)
    if side == "mpi4py":
        # --oversubscribe (Open MPI then yields when idle, as pld's waits do when ranks outnumber
        # cores) only where the ranks outnumber the cores: below, both sides spin.
        over = ["--oversubscribe"] if n > (os.cpu_count() or 1) else []
        cmds = [[o.mpirun, "--allow-run-as-root", *over, "--mca", "btl", "self,vader", "-np", str(n)] + me]
    elif side == "torch-gloo":
        store = os.path.join(tmp, f"gloo-store.{run_id}")
        cmds = [me + ["--rank", str(r), "--init", store] for r in range(n)]
    else:
        cmds = [me]
    procs, files, env = [], [], child_env()
    try:
        for i, cmd in enumerate(cmds):
            out, err = (open(os.path.join(tmp, f"{run_id}.{i}.{k}"), "w") for k in ("out", "err"))
            files.append((out, err))
            procs.append(subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True))
        deadline, timed_out = time.monotonic() + o.timeout, False
        while any(p.poll() is None for p in procs):
            timed_out = time.monotonic() > deadline
            if timed_out or any(p.returncode for p in procs):
                break  # a rank failed (its peers would wait for it) or the side hangs
            time.sleep(0.1)
    finally:
        stop(procs)
        for out, err in files:
            out.close()
            err.close()
    bad = [i for i, p in enumerate(procs) if p.returncode]
    if bad:
        why = f"timed out after {o.timeout:g} s" if timed_out else f"exit codes {[p.returncode for p in procs]}"
        tails = "".join(f"--- stderr{f' of rank {i}' if len(procs) > 1 else ''} (last lines):\n"
                        f"{tail(files[i][1].name) or '(empty)'}\n" for i in bad)
        raise SideFailed(f"python_peers.py: side {side} at P={n} failed ({why}):\n{tails}")
    with open(files[0][0].name) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def print_table(results, sides):
    samples = {}
    for m in results:
        samples.setdefault((m["ranks"], OPS.index(m["op"]), m["bytes"]), {}).setdefault(m["side"], []).append(m["us"])
    sides = [s for s in SIDES if s in sides]
    peers = [s for s in PEERS if s in sides]
    print(f"\n{'P':>2} {'op':<13} {'bytes':>9}" + "".join(f" {s:>11}" for s in sides) +
          f"  pld/min({', '.join(peers)})")
    for (n, op, nbytes), by_side in sorted(samples.items()):
        med = {s: statistics.median(v) for s, v in by_side.items()}
        cells = "".join(f" {med[s]:>11.2f}" if s in med else f" {'-':>11}" for s in sides)
        best = min((med[s] for s in peers if s in med), default=None)
        ratio = f"{med['pld'] / best:>8.2f}x" if best and "pld" in med else f"{'-':>9}"
        print(f"{n:>2} {OPS[op]:<13} {nbytes:>9}{cells}  {ratio}")


def available(o):
    """The sides to run, after dropping the ones whose dependencies are missing (with a note)."""
    missing = {"mpi4py": None if o.mpirun and importlib.util.find_spec("mpi4py") else "mpi4py or mpirun",
               "torch-gloo": None if importlib.util.find_spec("torch") else "torch"}
    sides = []
    for s in o.sides:
        if missing.get(s):
            print(f"python_peers.py: side {s} skipped: {missing[s]} not found for {sys.executable}", file=sys.stderr)
        else:
            sides.append(s)
    return sides


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="2,4", help="comma-separated rank counts")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated collectives")
    ap.add_argument("--sides", default=",".join(SIDES), help="comma-separated sides")
    ap.add_argument("--sizes", help="comma-separated sizes (4, 1K, 64M); replaces -b/-e/-f")
    ap.add_argument("-b", "--minbytes", default="4", help="smallest size")
    ap.add_argument("-e", "--maxbytes", default="64M", help="largest size")
    ap.add_argument("-f", "--stepfactor", type=int, default=4, help="multiply the size by this between points")
    ap.add_argument("--budget", default="1G", help="bytes per measurement that set the iteration count")
    ap.add_argument("--min-iters", type=int, default=20)
    ap.add_argument("--max-iters", type=int, default=2000)
    ap.add_argument("--iters", type=int, default=0, help="timed calls per row (0: from the budget)")
    ap.add_argument("--rounds", type=int, default=1, help="run every side this many times, interleaved")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 4 KiB, P=2, 20 iterations")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one side's run may take")
    ap.add_argument("--out", help="write one JSON line per measurement here")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a side's own process
    ap.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--init", help=argparse.SUPPRESS)
    o = ap.parse_args()
    if o.quick:
        o.ranks, o.sizes, o.iters = "2", "4K", 20
    try:
        o.ranks = [int(r) for r in o.ranks.split(",")]
        o.budget = parse_size(o.budget)
        if o.sizes:
            o.sizes = [parse_size(s) for s in o.sizes.split(",")]
        else:
            lo, hi, o.sizes = parse_size(o.minbytes), parse_size(o.maxbytes), []
            while lo <= hi and o.stepfactor > 1:
                o.sizes.append(lo)
                lo = lo * o.stepfactor if lo else 1
    except (ValueError, IndexError) as e:
        sys.exit(f"python_peers.py: bad --ranks or size: {e}")
    o.ops, o.sides = o.ops.split(","), o.sides.split(",")
    bad = [x for x in o.ops if x not in OPS] + [x for x in o.sides if x not in SIDES]
    if bad or not o.sizes or min(o.ranks) < 2 or min(o.min_iters, o.max_iters, o.rounds) < 1 or o.iters < 0:
        sys.exit(f"python_peers.py: bad arguments {bad or ''}: ops from {OPS}, sides from {SIDES}, "
                 "a size, ranks >= 2, --min-iters, --max-iters and --rounds >= 1")
    if o.side:  # one side's process: run every row, print the measurements
        o.ranks = o.ranks[0]
        {"pld": lambda: sides_.pld_side(o, "pld"), "pld-host": lambda: sides_.pld_side(o, "pld-host"),
         "mpi4py": lambda: sides_.mpi_side(o), "torch-gloo": lambda: sides_.torch_side(o)}[o.side]()
        return 0
    if importlib.util.find_spec("pld") is None:
        sys.exit("python_peers.py: pld not found: PYTHONPATH=build-release/python "
                 "(cmake --build build-release -j2 --target _pld)")
    o.mpirun = shutil.which("mpirun")
    sides = available(o)
    if not sides:
        sys.exit("python_peers.py: no side left to run")
    results, failed, notes, status = [], set(), set(), 0
    out = open(o.out, "w") if o.out else None
    try:
        with tempfile.TemporaryDirectory(prefix="python_peers.") as tmp:
            for rnd in range(o.rounds):
                for n in o.ranks:
                    k = rnd % len(sides)
                    for side in sides[k:] + sides[:k]:
                        if (side, n) in failed:
                            continue
                        t0 = time.monotonic()
                        try:
                            lines = run_side(side, n, o, tmp, f"{side}.{n}.{rnd}")
                        except SideFailed as e:
                            print(e, file=sys.stderr)
                            failed.add((side, n))
                            status = 2
                            continue
                        print(f"round {rnd + 1}/{o.rounds} P={n} {side}: {time.monotonic() - t0:.1f} s",
                              file=sys.stderr)
                        for m in lines:
                            if "note" in m:
                                notes.add(m["note"])
                                continue
                            m = {"suite": "python", **m, "round": rnd}
                            results.append(m)
                            if out:
                                out.write(json.dumps(m) + "\n")
                                out.flush()
    finally:
        if out:
            out.close()
    print(f"per-call time (us), float32 sum, median of {o.rounds} round(s); sizes in bytes of one rank's buffer")
    for note in sorted(notes):
        print("note:", note)
    print_table(results, sides)
    return status


if __name__ == "__main__":
    sys.exit(main())
