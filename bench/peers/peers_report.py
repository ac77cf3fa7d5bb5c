#!/usr/bin/env python3
"""The one ratio table of bench/peers/peers.sh: pld against the tools its users pick instead.

Reads every measurement of a run directory — JSON lines (`*.jsonl`: python_peers.py,
pld-bench-shmem, shmem_oshmem, gloo-bench) and pld-bench's JSON (`pld-bench.<suite>.<P>.r<round>.json`,
pld's side of the Gloo rows) — takes the median over rounds of each (suite, side, op, mode, bytes, ranks),
and prints one row per (suite, op, ranks, bytes): pld's time, each peer's, pld / the fastest peer,
the target and whether it holds.

  python3 bench/peers/peers_report.py build-peers/runs [--markdown]
"""
import collections
import glob
import json
import math
import os
import statistics
import sys

import scale_report  # bench/peers/scale_report.py: the pld-bench JSON reader

# The fastest way pld offers, per suite: the rows of these sides compete; the others are shown.
PLD_SIDES = ("pld", "pld-host")
PEERS = {"python": ("mpi4py", "torch-gloo"), "shmem": ("oshmem",), "gloo": ("gloo",)}


def target(suite, op, nbytes):
    """pld / fastest peer must be at most this."""
    if suite == "python":
        return 0.7 if nbytes >= 64 << 10 else 1.0
    if suite == "shmem":
        return 0.5 if (op == "put" and nbytes == 8) or op == "fetch_add" else 1.0
    return 0.5


def pld_bench_rows(path, suite, ranks):
    """pld-bench's JSON (the composite path, read as scale_report.py reads it) as measurement dicts."""
    times, _ = scale_report.rows(path, "pld")
    for (op, nbytes), us in times.items():
        yield {"suite": suite, "side": "pld", "op": op, "bytes": nbytes, "ranks": ranks, "us": us}


def load(runs):
    out = []
    for path in sorted(glob.glob(os.path.join(runs, "*.jsonl"))):
        with open(path) as f:
            out += [json.loads(line) for line in f if line.strip()]
    for path in sorted(glob.glob(os.path.join(runs, "pld-bench.*.json"))):
        _, suite, ranks = os.path.basename(path).split(".")[:3]  # pld-bench.<suite>.<P>.r<round>.json
        out += list(pld_bench_rows(path, suite, int(ranks)))
    return out


def medians(measurements):
    """(suite, op, ranks, bytes) -> {side or side/mode: median us}."""
    times = collections.defaultdict(list)
    for m in measurements:
        side = m["side"] + (f"/{m['mode']}" if m.get("mode") else "")
        times[(m["suite"], m["op"], m["ranks"], m["bytes"], side)].append(m["us"])
    rows = collections.defaultdict(dict)
    for (suite, op, ranks, nbytes, side), us in times.items():
        rows[(suite, op, ranks, nbytes)][side] = statistics.median(us)
    return rows


def fastest(sides, names):
    """(name, us) of the fastest side whose base name is in `names` (modes compete), else None."""
    best = [(us, s) for s, us in sides.items() if s.split("/")[0] in names and not math.isnan(us)]
    return (min(best)[1], min(best)[0]) if best else None


def size(nbytes):
    for unit, shift in (("M", 20), ("K", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return str(nbytes)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    markdown = "--markdown" in sys.argv
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit("usage: peers_report.py RUN_DIR [--markdown]  (RUN_DIR: bench/peers/peers.sh's runs/)")
    rows = medians(load(args[0]))
    if not rows:
        sys.exit(f"peers_report.py: no measurements in {args[0]}")
    head = ["suite", "op", "P", "bytes", "pld us", "peers us", "pld/peer", "target", ""]
    lines, misses, total = [], 0, 0
    for key in sorted(rows, key=lambda k: (k[0], k[1], k[2], k[3])):
        suite, op, ranks, nbytes = key
        sides = rows[key]
        mine = fastest(sides, PLD_SIDES)
        peer = fastest(sides, PEERS.get(suite, ()))
        peers = " ".join(f"{s} {us:.2f}" for s, us in sorted(sides.items()) if s.split("/")[0] not in PLD_SIDES)
        if not mine or not peer:
            lines.append([suite, op, str(ranks), size(nbytes), f"{mine[1]:.2f}" if mine else "-", peers, "-", "-",
                          "no pair"])
            continue
        ratio, goal = mine[1] / peer[1], target(suite, op, nbytes)
        total += 1
        misses += ratio > goal
        lines.append([suite, op, str(ranks), size(nbytes), f"{mine[1]:.2f}" + ("" if mine[0] == "pld" else f" ({mine[0]})"),
                      peers, f"{ratio:.2f}", f"<= {goal}", "ok" if ratio <= goal else "MISS"])
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
        for line in [head] + lines:
            print("  ".join(c.ljust(w) if i in (0, 1, 5) else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
    print(f"\n{total - misses} of {total} rows meet their target")


if __name__ == "__main__":
    main()
