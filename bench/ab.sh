#!/usr/bin/env bash
# bench/ab.sh — pld-bench at two git revisions, side by side in ONE run (interleaved rounds,
# medians): did a change make a collective faster or slower?
#
#   bench/ab.sh REV_A REV_B [--rounds N] [--out DIR] -- [pld-bench arguments]
#   bench/ab.sh main HEAD -- --op barrier,allreduce -b 4 -e 1M -f 16 -g 2
#
# Each revision is checked out into DIR/<rev> (git worktree) and built (Release, pld-bench only).
# Prints per row: time A, time B (median over rounds; the composite path, p2p's put and get, put_signal) and
# B/A (from the full-precision times of the JSON files).
set -euo pipefail

rounds=5
out=build-ab
revs=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    *) revs+=("$1"); shift ;;
  esac
done
[[ ${#revs[@]} -eq 2 ]] || { echo "usage: bench/ab.sh REV_A REV_B [--rounds N] [--out DIR] -- [pld-bench args]" >&2; exit 2; }
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--op barrier,allreduce -b 4 -e 1M -f 16 -g 2)

root=$(git rev-parse --show-toplevel)
mkdir -p "$out"
out=$(cd "$out" && pwd)
bins=()
for rev in "${revs[@]}"; do
  sha=$(git -C "$root" rev-parse --short "$rev")
  src="$out/src-$sha"
  if [[ ! -d "$src" ]]; then git -C "$root" worktree add --detach "$src" "$sha" >/dev/null; fi
  cmake -S "$src" -B "$out/build-$sha" -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF -DPLD_BUILD_EXAMPLES=OFF \
        -DPLD_BUILD_BENCH=OFF >/dev/null
  make -C "$out/build-$sha" -j2 pld-bench >/dev/null
  bins+=("$out/build-$sha/tools/pld-bench/pld-bench")
  echo "built $rev ($sha)"
done

for ((i = 0; i < rounds; ++i)); do
  for k in 0 1; do
    "${bins[$k]}" "${args[@]}" --progress never -J "$out/run-$k-$i.json" >/dev/null
  done
done

python3 - "$out" "$rounds" "${revs[0]}" "${revs[1]}" <<'PY'
import json, statistics, sys
out, rounds, a, b = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def rows(k):
    acc = {}
    for i in range(rounds):
        j = json.load(open(f"{out}/run-{k}-{i}.json"))
        for t in j["tables"]:
            for r in t["rows"]:
                for part in ("composite", "put", "get", "put_signal"):  # p2p and put_signal rows time their columns
                    if part in r:
                        name = t["collective"] if part == "composite" else f"{t['collective']} {part}"
                        key = (name, t.get("mode", ""), r["size"], r["type"], r["redop"])
                        acc.setdefault(key, []).append(r[part]["time_us"])
    return {k: statistics.median(v) for k, v in acc.items()}
A, B = rows(0), rows(1)
def us(t):  # the digits pld-bench prints: 4 decimals below 1 us, 3 below 100 us
    return f"{t:.4f}" if t < 1 else f"{t:.3f}" if t < 100 else f"{t:.2f}"
print(f"{'collective':<16}{'size':>10}{'A us':>10}{'B us':>10}{'B/A':>8}   A={a} B={b}, median of {rounds}")
for key in sorted(A, key=lambda k: (k[0], k[2])):
    if key in B:
        print(f"{key[0]:<16}{key[2]:>10}{us(A[key]):>10}{us(B[key]):>10}{B[key]/A[key]:>8.2f}")
PY
