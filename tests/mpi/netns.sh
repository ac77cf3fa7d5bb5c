#!/usr/bin/env bash
# NODES "nodes" on one machine: node i is a network namespace pldmpi<i> with the address
# 10.99.0.<i+1> on a veth into one bridge (namespace pldmpisw) and, for every process started in
# it, its own UTS namespace with the host name nsnode<i>. Open MPI sees NODES nodes joined only by
# TCP; the ranks of one node share its host name, so Open MPI (and pld) treat them as on-node peers
# and reach each other through shared memory. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).
# netns_run.sh wraps it for CTest and bench/mpi_compare.sh.
#   NODES=2 tests/mpi/netns.sh setup                      # create the namespaces and the bridge
#   NODES=2 SLOTS=2 tests/mpi/netns.sh run PROGRAM [args...]
#       # mpirun -n NODES*SLOTS, ranks SLOTS*i .. SLOTS*i+SLOTS-1 on node i (extra mpirun
#       # arguments in MPIRUN_ARGS, split at spaces; not --mca btl, which run sets)
#   tests/mpi/netns.sh teardown     # end every process left in them, delete them and their files
# NODES defaults to 2 (at most 250), SLOTS to 1.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
HOSTS=${TMPDIR:-/tmp}/pld-netns-hosts
NODES=${NODES:-2}
SLOTS=${SLOTS:-1}
SWITCH=pldmpisw
case "$NODES$SLOTS" in *[!0-9]*) echo "netns.sh: NODES='$NODES' SLOTS='$SLOTS' must be whole numbers" >&2; exit 2 ;; esac
if [ "$NODES" -lt 1 ] || [ "$NODES" -gt 250 ] || [ "$SLOTS" -lt 1 ]; then
  echo "netns.sh: NODES=$NODES must be in [1, 250] and SLOTS=$SLOTS at least 1" >&2; exit 2
fi

# The namespaces of an earlier run, whatever its NODES was.
our_namespaces() { ip netns list 2>/dev/null | awk '$1 ~ /^pldmpi/ {print $1}'; }

teardown() {
  local ns pids left
  for ns in $(our_namespaces); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  done
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    left=$(for ns in $(our_namespaces); do ip netns pids "$ns" 2>/dev/null; done)
    [ -n "$left" ] || break
    sleep 0.5
  done
  # shellcheck disable=SC2086
  [ -z "${left:-}" ] || kill -KILL $left 2>/dev/null || true
  for ns in $(our_namespaces); do ip netns del "$ns" 2>/dev/null || true; done
  # What killed ranks leave behind: Open MPI's session directories and vader segments, named
  # after the nodes' host names.
  rm -rf "${TMPDIR:-/tmp}"/ompi.nsnode* /dev/shm/*nsnode* 2>/dev/null || true
}

case "${1:-}" in
  setup)
    ip netns add $SWITCH
    ip -n $SWITCH link add pldbr type bridge
    ip -n $SWITCH link set pldbr up
    for ((i = 0; i < NODES; i++)); do
      ip netns add pldmpi$i
      ip link add pldv$i netns pldmpi$i type veth peer name pldp$i netns $SWITCH
      ip -n $SWITCH link set pldp$i master pldbr up
      ip -n pldmpi$i addr add 10.99.0.$((i + 1))/24 dev pldv$i
      ip -n pldmpi$i link set lo up
      ip -n pldmpi$i link set pldv$i up
    done ;;
  teardown) teardown ;;
  run)
    shift
    : >"$HOSTS"
    for ((i = 0; i < NODES; i++)); do echo "10.99.0.$((i + 1)) slots=$SLOTS" >>"$HOSTS"; done
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # Transports: across nodes TCP only (btl tcp; osc/ucx with UCX_TLS=tcp,self); inside a node
    # Open MPI's shared memory (btl vader; osc sm for shared windows). UCX's shared-memory
    # transports stay out: they do not go by host name and would carry traffic between the
    # "nodes" of one machine. Open MPI counts the cores of one node only, so it cannot know that
    # all nodes share the machine's cores: it must yield when idle. Each node binds its j-th rank
    # to core j: with one rank per node that puts every rank on core 0 (a pld barrier over TCP at
    # 8 ms instead of 0.3 ms), so those run unbound; with 2 or more (up to the cores) binding
    # keeps a node's ranks on different cores (the 2x2 collective suite in 26 s instead of 48 s).
    btl=tcp,self bind=none
    [ "$SLOTS" -eq 1 ] || btl=self,vader,tcp
    [ "$SLOTS" -lt 2 ] || [ "$SLOTS" -gt "$(nproc)" ] || bind=core
    # mpirun itself runs on node 0 (it must reach the other nodes' orted over the bridge); the
    # other nodes' orted are started by netns_agent.sh.
    # shellcheck disable=SC2086
    exec ip netns exec pldmpi0 unshare --uts sh -c "hostname nsnode0; exec mpirun -n $((NODES * SLOTS)) \
      --hostfile $HOSTS --map-by slot --mca plm_rsh_agent $HERE/netns_agent.sh \
      --mca oob_tcp_if_include 10.99.0.0/24 --mca btl_tcp_if_include 10.99.0.0/24 \
      --mca btl $btl -x UCX_TLS=tcp,self --mca mpi_yield_when_idle 1 --bind-to $bind ${MPIRUN_ARGS:-} $*" ;;
  *) sed -n 2,13p "$0"; exit 2 ;;
esac
