#!/usr/bin/env bash
# Two ranks in two network namespaces (veth pair 10.99.0.1 <-> 10.99.0.2), each with its own
# hostname, so Open MPI sees two nodes joined only by TCP. Needs root (CAP_NET_ADMIN,
# CAP_SYS_ADMIN). netns_run.sh wraps it for CTest. Usage:
#   tests/mpi/netns.sh setup                      # create namespaces + veth
#   tests/mpi/netns.sh run PROGRAM [args...]      # mpirun -n 2 across them (extra mpirun args in MPIRUN_ARGS)
#   tests/mpi/netns.sh teardown
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
HOSTS=${TMPDIR:-/tmp}/pld-netns-hosts
case "${1:-}" in
  setup)
    ip netns add pldmpiA; ip netns add pldmpiB
    ip link add pldvA type veth peer name pldvB
    ip link set pldvA netns pldmpiA; ip link set pldvB netns pldmpiB
    ip -n pldmpiA addr add 10.99.0.1/24 dev pldvA; ip -n pldmpiB addr add 10.99.0.2/24 dev pldvB
    for ns in pldmpiA pldmpiB; do ip -n $ns link set lo up; done
    ip -n pldmpiA link set pldvA up; ip -n pldmpiB link set pldvB up ;;
  teardown)
    ip netns del pldmpiA 2>/dev/null || true; ip netns del pldmpiB 2>/dev/null || true ;;
  run)
    shift
    printf '10.99.0.1 slots=1\n10.99.0.2 slots=1\n' >"$HOSTS"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # mpirun itself runs in namespace A (it must reach B's orted over the veth); B's orted is
    # started by netns_agent.sh.
    # shellcheck disable=SC2086
    exec ip netns exec pldmpiA unshare --uts sh -c "hostname pldnodeA; exec mpirun -n 2 --hostfile $HOSTS --map-by node \
      --mca plm_rsh_agent $HERE/netns_agent.sh --mca oob_tcp_if_include 10.99.0.0/24 \
      --mca btl_tcp_if_include 10.99.0.0/24 ${MPIRUN_ARGS:-} $*" ;;
  *) sed -n 2,7p "$0"; exit 2 ;;
esac
