#!/usr/bin/env bash
# Sourced by the benchmarks that start their own simulated cluster (benchmarks/cluster_*.sh;
# tools/sim-cluster.sh, docs/cluster-tests.md), from the repository root. It sources
# tools/mpi-env.sh and tools/data-env.sh, sets BIN (the build's binaries, $CONFLUX_BIN or
# build/bin), BENCH ($BIN/conflux-bench) and OUT (bench-results), and provides:
#   cluster_start NAME HOSTS   skips the benchmark (exit 0, saying why) where the cluster cannot
#                              run (not root, no namespaces, not Open MPI); otherwise starts
#                              hosts h0..h<HOSTS-1> and head (no SLURM) under a temporary root,
#                              stopped and removed when the script exits, even when killed,
#                              and creates OUT
#   on_head COMMAND...         runs COMMAND on head (mpirun from there: TCP between hosts,
#                              shared memory within one), at most $CLUSTER_TIMEOUT_S (600) s
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
SIM=tools/sim-cluster.sh
BIN=$(readlink -f "${CONFLUX_BIN:-build/bin}")
# shellcheck disable=SC2034  # read by the scripts that source this file
BENCH=$BIN/conflux-bench OUT=bench-results

cluster_start() {
  local name=$1 hosts=$2 why
  if [ "$CONFLUX_MPI" != openmpi ]; then
    echo "$name: skipped: the simulated cluster's launcher is Open MPI's rsh agent; this build uses $CONFLUX_MPI"
    exit 0
  fi
  if ! why=$("$SIM" check); then
    echo "$name: skipped: ${why#sim-cluster: }"
    exit 0
  fi
  SIM_CLUSTER_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
  export SIM_CLUSTER_ROOT
  trap '"$SIM" stop >/dev/null 2>&1; rm -rf "$SIM_CLUSTER_ROOT"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  "$SIM" start --hosts "$hosts" --no-slurm --owner $$ | tail -1
  mkdir -p "$OUT"
}

on_head() { timeout "${CLUSTER_TIMEOUT_S:-600}" "$SIM" exec head "$@"; }
