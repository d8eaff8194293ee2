#!/usr/bin/env bash
# Sourced by the benchmarks that start their own simulated cluster (benchmarks/cluster_*.sh;
# tools/sim-cluster.sh, docs/cluster-tests.md), from the repository root after tools/mpi-env.sh:
#   cluster_start NAME HOSTS   skips the benchmark (exit 0, saying why) where the cluster cannot
#                              run (not root, no namespaces, not Open MPI); otherwise starts
#                              hosts h0..h<HOSTS-1> and head (no SLURM) under a temporary root,
#                              stopped and removed when the script exits, even when killed
#   on_head COMMAND...         runs COMMAND on head (mpirun from there: TCP between hosts,
#                              shared memory within one), at most $CLUSTER_TIMEOUT_S (600) s
SIM=tools/sim-cluster.sh

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
}

on_head() { timeout "${CLUSTER_TIMEOUT_S:-600}" "$SIM" exec head "$@"; }
