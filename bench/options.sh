# The option checks bench/compare_mpi.sh and bench/mpi_compare.sh share (sourced, not run).

# pick_colls SCRIPT LIST [EXTRA...]: sets COLLS to the names of the comma-separated LIST; exits 2
# naming SCRIPT on a name that is neither in ALL_COLLS nor one of the EXTRA names.
pick_colls() {
  local script=$1 list=$2 c
  shift 2
  COLLS=()
  for c in ${list//,/ }; do
    [[ " ${ALL_COLLS[*]} $* " == *" $c "* ]] ||
      { echo "$script: unknown collective '$c' in --colls (${ALL_COLLS[*]}${*:+ $*})" >&2; exit 2; }
    COLLS+=("$c")
  done
}

# check_size SCRIPT VALUE: exits 2 naming SCRIPT unless VALUE is a size such as 4K or 64M.
check_size() {
  [[ "$2" =~ ^[0-9]+[KMG]?$ ]] ||
    { echo "$1: --max-bytes '$2' is not a size; write e.g. 4K or 64M" >&2; exit 2; }
}
