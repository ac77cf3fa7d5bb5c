#!/usr/bin/env bash
# Installs the Debian 12 packages pld needs to build, test and benchmark (only those missing).
set -euo pipefail
packages=(
  g++ make cmake ninja-build            # C++20 toolchain, CMake >= 3.25; Ninja: the presets' generator
  ccache                                # the test command's second build reuses the first's objects
  libgtest-dev libgmock-dev             # tests
  libfmt-dev                            # formatting
  libcli11-dev                          # command lines (tutorials, tools, benchmarks)
  nlohmann-json3-dev                    # JSON (benchmark output, traces)
  libhwy-dev                            # SIMD and fp16/bf16
  openmpi-bin libopenmpi-dev            # the mpi backend; Open MPI baseline (bench/compare_mpi.sh)
  iproute2                              # ip netns: the two-"node" mpi tests (tests/mpi/netns_run.sh)
  gnuplot-nox                           # busbw plot of bench/compare_mpi.sh
  clang-format                          # the format check (scripts/format.sh)
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python package (python/) and its tests
  python3-mpi4py                        # the mpi4py baseline of bench/python/moe.py and bench/peers
  python3-torch                         # torch.distributed (gloo backend): a peer of bench/peers
  libgloo-dev                           # C++ Gloo: a peer of bench/peers (gloo-bench)
  time                                  # /usr/bin/time: peak RSS in bench/peers/scale.sh
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "pld: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
