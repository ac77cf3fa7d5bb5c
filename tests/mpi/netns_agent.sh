#!/bin/sh
# plm_rsh_agent for two network namespaces on one machine (netns.sh): mpirun calls
#   netns_agent.sh [options] <host> <orted command...>
# and we start the command in the namespace named after the host, in its own UTS namespace with
# its own hostname, so that Open MPI sees two nodes.
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
case "$host" in
  10.99.0.1) ns=pldmpiA; name=pldnodeA ;;
  10.99.0.2) ns=pldmpiB; name=pldnodeB ;;
  *) echo "netns_agent: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $name; $*"
