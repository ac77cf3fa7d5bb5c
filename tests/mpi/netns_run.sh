#!/usr/bin/env bash
# Runs PROGRAM on 2 ranks in two network namespaces joined by a veth pair — two "nodes" that share
# no memory and reach each other only over TCP, the closest to two hosts on one machine
# (tests/mpi/netns.sh). Exit 77 (CTest: skipped) when namespaces cannot be created here
# (no root / CAP_NET_ADMIN, no `ip`).
#   tests/mpi/netns_run.sh PROGRAM [args...]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
NETNS="$HERE/netns.sh"
command -v ip >/dev/null 2>&1 || { echo "netns_run: no 'ip' command (iproute2): skipped"; exit 77; }
"$NETNS" teardown >/dev/null 2>&1
if ! "$NETNS" setup >/dev/null 2>&1; then
  "$NETNS" teardown >/dev/null 2>&1
  echo "netns_run: cannot create network namespaces here (needs root with CAP_NET_ADMIN): skipped"
  exit 77
fi
trap '"$NETNS" teardown >/dev/null 2>&1' EXIT
# Each "node" also needs its own UTS namespace (its own host name); some sandboxes refuse that.
if ! ip netns exec pldmpiA unshare --uts true >/dev/null 2>&1; then
  echo "netns_run: cannot create a UTS namespace here: skipped"
  exit 77
fi
# Each rank is alone on its "node": Open MPI must yield when idle (it cannot know that both share
# two cores), and only TCP exists between them.
MPIRUN_ARGS="--mca mpi_yield_when_idle 1 --mca btl tcp,self -x UCX_TLS=tcp,self -x PLD_WAIT_TIMEOUT=60" \
  "$NETNS" run "$@"
