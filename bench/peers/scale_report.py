#!/usr/bin/env python3
"""The table of bench/peers/scale.sh: medians over rounds of pld-bench and mpi_bench JSON files
(runs/{pld,mpi}.<P>.<collective>.r<round>.json) and pld's peak RSS (runs/pld.<P>.<coll>.r<round>.rss,
KiB from /usr/bin/time)."""
import collections
import glob
import json
import math
import os
import re
import statistics
import sys


def rows(path, side):
    """(collective, size) -> time_us of one JSON file."""
    with open(path) as f:
        d = json.load(f)
    out = {}
    for table in d["tables"]:
        for row in table["rows"]:
            cell = row.get("composite" if side == "pld" else "mpi")
            if cell and cell.get("time_us") is not None:
                out[(table["collective"], row["size"])] = cell["time_us"]
    return out, d.get("heap_bytes")


def main():
    runs = sys.argv[1]
    times = collections.defaultdict(list)  # (P, coll, size, side) -> [us]
    rss = collections.defaultdict(list)  # P -> [KiB]
    heap = {}
    for path in glob.glob(os.path.join(runs, "*.json")):
        m = re.match(r"(pld|mpi)\.(\d+)\.(\w+)\.r\d+\.json$", os.path.basename(path))
        if not m:
            continue
        side, p = m.group(1), int(m.group(2))
        got, heap_bytes = rows(path, side)
        for (coll, size), us in got.items():
            times[(p, coll, size, side)].append(us)
        if side == "pld" and heap_bytes:
            heap[p] = max(heap.get(p, 0), heap_bytes)
    for path in glob.glob(os.path.join(runs, "*.rss")):
        p = int(os.path.basename(path).split(".")[1])
        with open(path) as f:
            text = f.read().split()
        if text and text[-1].isdigit():
            rss[p].append(int(text[-1]))
    keys = sorted({(p, c, s) for (p, c, s, _) in times})
    print(f"{'P':>3} {'collective':<11} {'bytes':>8} {'pld us':>10} {'MPI us':>10} {'pld/MPI':>8}")
    med = {}
    for p, c, s in keys:
        a, b = times.get((p, c, s, "pld")), times.get((p, c, s, "mpi"))
        ma = statistics.median(a) if a else math.nan
        mb = statistics.median(b) if b else math.nan
        med[(p, c, s)] = ma
        print(f"{p:>3} {c:<11} {s:>8} {ma:>10.2f} {mb:>10.2f} {ma / mb:>8.2f}")
    print(f"\n{'P':>3} {'peak RSS MiB (largest process)':>31} {'/dev/shm MiB (P x heap)':>24}")
    for p in sorted(rss):
        shm = heap.get(p, 0) * p / 2**20
        print(f"{p:>3} {max(rss[p]) / 1024:>31.1f} {shm:>24.1f}")
    ps = sorted({p for p, _, _ in keys})
    if len(ps) > 1:
        print("\ngrowth of pld's time per doubling of P (log P: about constant steps; flat O(P) fan-in: x2)")
        for c, s in sorted({(c, s) for _, c, s in keys if (c, s) in (("barrier", 0), ("allreduce", 8))}):
            steps = [f"{med[(b, c, s)] / med[(a, c, s)]:.2f}" for a, b in zip(ps, ps[1:])
                     if (a, c, s) in med and (b, c, s) in med]
            print(f"  {c} {s} B: " + " ".join(steps))


if __name__ == "__main__":
    main()
