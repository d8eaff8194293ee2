#!/usr/bin/env bash
# Benchmark: the automatic offload ratio against fixed ratios with the trainer alone on host h0
# and each worker on a host of its own (h1, h2, ...) of the simulated cluster
# (tools/sim-cluster.sh, docs/cluster-tests.md), so that every batch a worker builds reaches the
# trainer over TCP (Open MPI's TCP transport between the hosts' network namespaces):
#   mpirun -np W+1 --host h0,h1,..,hW conflux-bench offload --parts input
# which, for 1..W workers, sweeps fixed ratios and runs "auto" (the controller conflux train
# uses), interleaved in rounds, with a SIMULATED GPU step (a sleep) as the trainer's compute,
# and reports auto as % of the best fixed ratio (docs/scaling.md quotes it).
# The hosts share this machine's cores and their "wire" is a memory copy in one kernel, so the
# figures say whether auto finds the best ratio when the workers are remote, not what a real
# network gives. Starts its own cluster (W+1 hosts, no SLURM) under a temporary root and stops
# it at exit; skips, saying why, where the cluster cannot run.
# Options: WORKER_HOSTS (default 2), ROUNDS (default 3), RUN_SECONDS (default 2: each measured
# run), CLUSTER_TIMEOUT_S (default 1800: the whole sweep; 2 worker hosts took 10 min on 2 busy
# shared cores).
# Results: bench-results/cluster_offload.{txt,json}
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/cluster_lib.sh
source benchmarks/cluster_lib.sh
WORKER_HOSTS=${WORKER_HOSTS:-2}
ROUNDS=${ROUNDS:-3}
RUN_SECONDS=${RUN_SECONDS:-2}
CLUSTER_TIMEOUT_S=${CLUSTER_TIMEOUT_S:-1800}

cluster_start cluster-offload $((WORKER_HOSTS + 1))
hosts=h0
for ((w = 1; w <= WORKER_HOSTS; ++w)); do hosts+=",h$w"; done

echo
echo "== conflux-bench offload: trainer on h0, workers on ${hosts#h0,} =="
on_head "$MPI_LAUNCHER" -np $((WORKER_HOSTS + 1)) --host "$hosts" "$BENCH" offload \
  --data-dir "$CONFLUX_DATA" --parts input --rounds "$ROUNDS" --seconds "$RUN_SECONDS" \
  --json "$OUT/cluster_offload.json" | tee "$OUT/cluster_offload.txt"
