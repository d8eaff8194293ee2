#!/usr/bin/env bash
# Benchmark: transfers between two hosts of the simulated cluster (tools/sim-cluster.sh,
# docs/cluster-tests.md) against the raw TCP bandwidth between the same two hosts, measured in
# the same run:
#   - conflux-bench tcp, rank 0 on h0 and rank 1 on h1 (Open MPI's TCP transport): raw TCP
#     socket stream, MPI_Send/MPI_Recv and the gradient allreduce, as fractions of the TCP stream;
#   - conflux-bench data-service --goodput-steps N, trainer on h0 and worker on h1: the data
#     service's goodput against plain MPI_Send/MPI_Recv between the same two ranks;
#   - conflux-bench tcp with both ranks on h0 (shared memory between them), for contrast.
# The hosts are network namespaces on one kernel joined by veth pairs and a bridge: the "wire"
# is a memory copy in the kernel, so the figures say how much of the TCP path conflux keeps, not
# what a real interconnect gives.
# Starts its own cluster (2 hosts, no SLURM) under a temporary root and stops it at exit. Skips,
# saying why, where the cluster cannot run (not root, no namespaces, not Open MPI).
# Options: TCP_MIB (default 256), ROUNDS (default 5), GOODPUT_STEPS (default 30).
# Results: bench-results/cluster_tcp*.{txt,json}, bench-results/cluster_data_service.{txt,json}
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/cluster_lib.sh
source benchmarks/cluster_lib.sh
TCP_MIB=${TCP_MIB:-256}
ROUNDS=${ROUNDS:-5}
GOODPUT_STEPS=${GOODPUT_STEPS:-30}

cluster_start cluster-tcp 2

echo
echo "== conflux-bench tcp: rank 0 on h0, rank 1 on h1 =="
on_head "$MPI_LAUNCHER" -np 2 --host h0,h1 "$BENCH" tcp --mib "$TCP_MIB" --rounds "$ROUNDS" \
  --json "$OUT/cluster_tcp.json" | tee "$OUT/cluster_tcp.txt"
echo
echo "== conflux-bench data-service goodput: trainer on h0, worker on h1 =="
on_head "$MPI_LAUNCHER" -np 2 --host h0,h1 "$BENCH" data-service --data-dir "$CONFLUX_DATA" \
  --ratios 1 --steps 10 --rounds "$ROUNDS" --goodput-steps "$GOODPUT_STEPS" --tcp-mib "$TCP_MIB" \
  --json "$OUT/cluster_data_service.json" | tee "$OUT/cluster_data_service.txt"
echo
echo "== conflux-bench tcp: both ranks on h0 (MPI over shared memory, TCP over loopback) =="
on_head "$MPI_LAUNCHER" -np 2 --host h0:2 "$BENCH" tcp --mib "$TCP_MIB" --rounds "$ROUNDS" \
  --json "$OUT/cluster_tcp_one_host.json" | tee "$OUT/cluster_tcp_one_host.txt"
