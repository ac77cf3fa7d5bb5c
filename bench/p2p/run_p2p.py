#!/usr/bin/env python3
"""Runs pld-bench-p2p several times and summarises the runs (median and spread) as Markdown.

  bench/p2p/run_p2p.py --bin build-release/bench/p2p/pld-bench-p2p --runs 3 --out /tmp/p2p -- --pin
  bench/p2p/run_p2p.py --summarize /tmp/p2p/run1.json /tmp/p2p/run2.json /tmp/p2p/run3.json

Before each run it waits until the machine is quiet (other processes use < --max-busy of the CPU
time for two seconds): spin-waiting benchmarks on a 2-core machine measure the scheduler otherwise.
Only the standard library is used.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def cpu_busy(seconds):
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return sum(v) - v[3] - v[4], sum(v)

    b0, t0 = sample()
    time.sleep(seconds)
    b1, t1 = sample()
    return (b1 - b0) / max(1, t1 - t0)


def wait_quiet(max_busy, timeout):
    start = time.time()
    while True:
        busy = cpu_busy(2.0)
        if busy <= max_busy:
            return busy
        if time.time() - start > timeout:
            print(f"# machine still {busy:.0%} busy after {timeout:.0f} s; running anyway", file=sys.stderr)
            return busy
        print(f"# machine {busy:.0%} busy, waiting...", file=sys.stderr)


def fmt_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def summarize(paths):
    docs = [json.load(open(p)) for p in paths]
    keys = [(r["metric"], r["bytes"]) for r in docs[0]["results"]]
    lines = [
        f"Median of {len(docs)} runs, spread = [min, max] over the runs.",
        "",
        "| metric | size | unit | pld | baseline | ratio pld/baseline | target | result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in keys:
        rows = [next(r for r in d["results"] if (r["metric"], r["bytes"]) == key) for d in docs]
        unit = rows[0]["unit"]
        digits = 0 if unit == "ns" else 2

        def cell(field, d=digits, suffix=""):
            v = [r[field] for r in rows]
            return f"{statistics.median(v):.{d}f}{suffix} [{min(v):.{d}f}, {max(v):.{d}f}]"

        ratio = statistics.median(r["ratio"] for r in rows)
        target = rows[0].get("target", "-")
        result = "-"
        if target != "-":
            bound = float(target[2:-1])
            ok = ratio <= bound if target.startswith("<=") else ratio >= bound
            passes = sum(1 for r in rows if r["pass"])
            result = f"{'PASS' if ok else 'MISS'} ({passes}/{len(rows)} runs)"
        lines.append(f"| {key[0]} | {fmt_size(key[1])} | {unit} | {cell('pld')} | {cell('baseline')} | "
                     f"{cell('ratio', 3, '')} | {target} | {result} |")
    lines += ["", "First call of each size (fresh buffers, page faults included), GB/s, median [min, max]:", "",
              "| metric | size | pld | memcpy |", "|---|---|---|---|"]
    for key in keys:
        rows = [next(r for r in d["results"] if (r["metric"], r["bytes"]) == key) for d in docs]
        if rows[0]["unit"] == "ns":
            continue

        def c(field):
            v = [r[field] for r in rows]
            return f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]"

        lines.append(f"| {key[0]} | {fmt_size(key[1])} | {c('first_touch_pld')} | {c('first_touch_baseline')} |")
    busy = [d["host"].get("busy_before_start", -1) for d in docs]
    lines += ["", f"CPU busy before each run: {', '.join(f'{b:.0%}' for b in busy)}"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build-release/bench/p2p/pld-bench-p2p")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="p2p-runs", help="directory for runN.txt / runN.json")
    ap.add_argument("--max-busy", type=float, default=0.05, help="quiet = other processes below this CPU share")
    ap.add_argument("--wait-timeout", type=float, default=1800)
    ap.add_argument("--summarize", nargs="+", metavar="JSON", help="only summarise these JSON files")
    ap.add_argument("args", nargs="*", help="arguments for pld-bench-p2p (after --)")
    a = ap.parse_args()
    if a.summarize:
        print(summarize(a.summarize))
        return 0
    os.makedirs(a.out, exist_ok=True)
    paths = []
    for i in range(1, a.runs + 1):
        wait_quiet(a.max_busy, a.wait_timeout)
        path = os.path.join(a.out, f"run{i}.json")
        cmd = [a.bin, *a.args, "--json", path]
        print(f"# run {i}: {' '.join(cmd)}", file=sys.stderr)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        with open(os.path.join(a.out, f"run{i}.txt"), "w") as f:
            f.write(out)
        sys.stderr.write(out)
        paths.append(path)
    print(summarize(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
