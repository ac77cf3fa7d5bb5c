#!/usr/bin/env python3
"""What the race detector costs: pld-bench rows and every tutorial (C++ and Python) with
PLD_DEBUG=0 and PLD_DEBUG=race, interleaved rounds in one run, medians, and the ratio race / off.

  bench/race/overhead.py [--build build-release] [--tutorials build-ci] [--rounds 3] [--ranks 4] [--quick]

pld-bench rows are per-operation times from its JSON; a tutorial's row is its wall time (start-up,
fork and checks included), the cost a user sees."""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_OPS = "p2p,put_signal,barrier,allreduce,broadcast,allgather,all_to_all"


def bench_rows(path):
    """(collective, size, column) -> time_us of one pld-bench JSON file."""
    with open(path) as f:
        d = json.load(f)
    out = {}
    for table in d["tables"]:
        for row in table["rows"]:
            for column, cell in row.items():
                if isinstance(cell, dict) and cell.get("time_us") is not None:
                    out[(table["collective"], row.get("size", row.get("count")), column)] = cell["time_us"]
    return out


def run_bench(exe, mode, args, workdir, rnd):
    out = os.path.join(workdir, f"bench.{mode}.{rnd}.json")
    env = dict(os.environ, PLD_DEBUG="race" if mode == "race" else "0")
    subprocess.run([exe] + args + ["-J", out], env=env, check=True, stdout=subprocess.DEVNULL)
    return bench_rows(out)


def tutorials(build, ranks):
    """(name, argv, env) of every C++ and Python tutorial."""
    devices = ",".join(str(r) for r in range(ranks))
    found = []
    cxx = os.path.join(build, "examples", "tutorial")
    for name in sorted(os.listdir(os.path.join(ROOT, "examples", "tutorial"))):
        exe = os.path.join(cxx, name)
        if name[:2].isdigit() and os.access(exe, os.X_OK):
            found.append((name, [exe, "-d", devices], {}))
    py_dir = os.path.join(ROOT, "examples", "python")
    if not os.path.isdir(os.path.join(build, "python", "pld")):  # a tree without the Python package
        return found
    py_env = {"PYTHONPATH": os.pathsep.join([os.path.join(build, "python"), py_dir])}
    for name in sorted(os.listdir(py_dir)):
        if name[:2].isdigit() and name.endswith(".py"):
            found.append(("py " + name[:-3], [sys.executable, os.path.join(py_dir, name), "-d", devices], py_env))
    return found


def run_timed(argv, env, mode):
    full = dict(os.environ, **env, PLD_DEBUG="race" if mode == "race" else "0")
    t0 = time.perf_counter()
    subprocess.run(argv, env=full, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - t0


def table(title, rows):
    print(f"\n{title}")
    print(f"{'row':<44} {'off':>12} {'race':>12} {'race/off':>9}")
    for name, off, race in rows:
        print(f"{name:<44} {off:>12.4f} {race:>12.4f} {race / off:>8.2f}x")
    ratios = [race / off for _, off, race in rows if off > 0]
    if ratios:
        print(f"{'':<44} {'':>12} {'max':>12} {max(ratios):>8.2f}x   median {statistics.median(ratios):.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"), help="tree with tools/pld-bench")
    ap.add_argument("--tutorials", default=os.path.join(ROOT, "build-ci"), help="tree with the tutorials and python")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=4, help="ranks of every tutorial (pld-bench runs -g 2)")
    ap.add_argument("--quick", action="store_true", help="one round, one size, few iterations (a smoke run)")
    a = ap.parse_args()
    rounds = 1 if a.quick else a.rounds
    bench = os.path.join(a.build, "tools", "pld-bench", "pld-bench")
    args = ["--op", BENCH_OPS, "-g", "2", "-b", "8", "-e", "8" if a.quick else "1M", "-f", "128"]
    args += ["-n", "50"] if a.quick else ["-n", "20000"]
    tuts = tutorials(a.tutorials, a.ranks)
    if a.quick:
        tuts = tuts[:2]
    times = collections.defaultdict(list)
    walls = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="pld-race-bench-") as work:
        for rnd in range(rounds):
            for mode in ("off", "race") if rnd % 2 == 0 else ("race", "off"):
                for key, us in run_bench(bench, mode, args, work, rnd).items():
                    times[(key, mode)].append(us)
                for name, argv, env in tuts:
                    walls[(name, mode)].append(run_timed(argv, env, mode))
    bench_table = []
    for (key, mode) in sorted(k for k in times if k[1] == "off"):
        if (key, "race") in times:
            coll, size, column = key
            bench_table.append((f"{coll} {size} B {column} (us)", statistics.median(times[(key, "off")]),
                                statistics.median(times[(key, "race")])))
    table(f"pld-bench {' '.join(args)} — per-operation time", bench_table)
    table(f"tutorials at {a.ranks} ranks — wall time (s)",
          [(name, statistics.median(walls[(name, "off")]), statistics.median(walls[(name, "race")]))
           for name, _, _ in tuts])
    return 0


if __name__ == "__main__":
    sys.exit(main())
