#!/usr/bin/env bash
# Runs PROGRAM on NODES x SLOTS ranks (default 2 x 1): NODES network namespaces joined by a bridge,
# each with its own host name, SLOTS ranks on each — "nodes" that reach each other only over TCP,
# the closest to several hosts on one machine (tests/mpi/netns.sh, which also picks the
# transports: TCP between nodes, shared memory inside one). Exit 77 (CTest: skipped) when
# namespaces cannot be created here (no root / CAP_NET_ADMIN, no `ip`).
#   NODES=2 SLOTS=2 tests/mpi/netns_run.sh PROGRAM [args...]
# One run at a time on the machine (a lock: the namespaces' names are global); the run is ended
# after NETNS_TIMEOUT seconds (default 540, below CTest's 600) and the namespaces are deleted
# however it ends.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
NETNS="$HERE/netns.sh"
export NODES=${NODES:-2} SLOTS=${SLOTS:-1}
command -v ip >/dev/null 2>&1 || { echo "netns_run: no 'ip' command (iproute2): skipped"; exit 77; }
exec 9>"${TMPDIR:-/tmp}/pld-netns.lock"
if ! flock -w 600 9; then
  echo "netns_run: another run has held the namespaces for 10 minutes (${TMPDIR:-/tmp}/pld-netns.lock)" >&2
  exit 1
fi
"$NETNS" teardown >/dev/null 2>&1
if ! "$NETNS" setup >/dev/null 2>&1; then
  "$NETNS" teardown >/dev/null 2>&1
  echo "netns_run: cannot create network namespaces here (needs root with CAP_NET_ADMIN): skipped"
  exit 77
fi
run_pid=
# On the way out: mpirun ends its job itself when asked (up to 5 s), then teardown ends what is left.
cleanup() {
  if [ -n "$run_pid" ] && kill -TERM "$run_pid" 2>/dev/null; then
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.5; done
  fi
  "$NETNS" teardown >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
# Each "node" also needs its own UTS namespace (its own host name); some sandboxes refuse that.
if ! ip netns exec pldmpi0 unshare --uts true >/dev/null 2>&1; then
  echo "netns_run: cannot create a UTS namespace here: skipped"
  exit 77
fi
# In the background: a signal must reach the trap now, not after the run (bash defers traps while
# a foreground child runs).
MPIRUN_ARGS="-x PLD_WAIT_TIMEOUT=60 ${MPIRUN_ARGS:-}" timeout -k 10 "${NETNS_TIMEOUT:-540}" "$NETNS" run "$@" </dev/null &
run_pid=$!
wait $run_pid
