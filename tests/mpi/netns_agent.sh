#!/bin/sh
# plm_rsh_agent for the network namespaces of netns.sh: mpirun calls
#   netns_agent.sh [options] <host> <orted command...>
# and the command starts in node i's namespace (host 10.99.0.<i+1>: pldmpi<i>), in its own UTS
# namespace with the host name nsnode<i>, so that Open MPI sees one node per namespace.
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
case "$host" in
  10.99.0.*) i=$((${host#10.99.0.} - 1)) ;;
  *) echo "netns_agent: unknown host '$host' (netns.sh's nodes are 10.99.0.1 ...)" >&2; exit 1 ;;
esac
exec ip netns exec "pldmpi$i" unshare --uts sh -c "hostname nsnode$i; $*"
