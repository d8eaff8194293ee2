#!/usr/bin/env bash
# Benchmark: the parameters of docs/scaling.md's scale model and its check against measurement,
# on the simulated cluster (tools/sim-cluster.sh, docs/cluster-tests.md), 4 hosts:
#   - conflux-bench tcp, rank 0 on h0 and rank 1 on h1: alpha (small-message latency), beta
#     (per byte of large MPI_Send messages) and gamma (the float sum) between hosts; and with
#     both ranks on h0: alpha and beta within a host (shared memory);
#   - conflux-bench grad-sync (the trainers' MPI_Iallreduce) at 2 ranks (h0,h1), 4 ranks (one
#     per host, and two per host on h0,h1) and 8 ranks (two per host): the measured times;
#   - a short conflux train (2 trainers on h0,h1, 1 worker on h2, audit on): the bytes of one
#     event of the merged timeline;
#   - conflux-bench scale-model over those files (and bench-results/cluster_offload.json from
#     benchmarks/cluster_offload.sh, when present): predicted against measured, projections to
#     4096 ranks, data-service fan-in and credits, the first limits.
# The hosts share this machine's cores and their "wire" is a memory copy in one kernel: the
# parameters are this simulated cluster's, not a real network's. Starts its own cluster and
# stops it at exit; skips, saying why, where the cluster cannot run.
# Options: ROUNDS (default 3), ITERS (default 10: allreduces per size).
# Results: bench-results/cluster_scale/*.json, bench-results/cluster_scale.txt
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/cluster_lib.sh
source benchmarks/cluster_lib.sh
OUT=$OUT/cluster_scale
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-10}

cluster_start cluster-scale 4
run_dir=$SIM_CLUSTER_ROOT/train-run

echo
echo "== alpha, beta, gamma: conflux-bench tcp, h0 -> h1 and within h0 =="
for where in net:h0,h1 shm:h0:2; do
  on_head "$MPI_LAUNCHER" -np 2 --host "${where#*:}" "$BENCH" tcp --mib 64 --rounds "$ROUNDS" \
    --latency-s 5 --allreduce-mib 1 --json "$OUT/tcp_${where%%:*}.json" |
    sed -n '/alpha-beta/,/^gamma/p'
done

echo
echo "== measured allreduce: conflux-bench grad-sync =="
checks=()
for hosts in h0,h1 h0,h1,h2,h3 h0:2,h1:2 h0:2,h1:2,h2:2,h3:2; do
  n=$(echo "$hosts" | awk -F, '{n = 0; for (i = 1; i <= NF; i++) n += ($i ~ /:/) ? substr($i, index($i, ":") + 1) : 1; print n}')
  file=$OUT/grad_sync_${n}_${hosts//[:,]/_}.json
  on_head "$MPI_LAUNCHER" -np "$n" --host "$hosts" "$BENCH" grad-sync --kreduce false \
    --iters "$ITERS" --max-bytes $((4 << 20)) --set "data.dir=$CONFLUX_DATA" --json "$file" |
    grep -E '^(buffer|model|sweep)' | sed "s/^/$n ranks on $hosts: /"
  checks+=(--check "$file")
done

echo
echo "== which algorithm: 8 ranks with libnbc's binomial (2) and ring (1) forced =="
for alg in 2 1; do
  on_head "$MPI_LAUNCHER" -np 8 --host h0:2,h1:2,h2:2,h3:2 --mca coll_libnbc_iallreduce_algorithm \
    "$alg" "$BENCH" grad-sync --kreduce false --iters "$ITERS" --max-bytes $((4 << 20)) \
    --set "data.dir=$CONFLUX_DATA" --json "$OUT/grad_sync_8_algorithm_$alg.json" |
    grep -E '^(model|sweep)' | sed "s/^/8 ranks, algorithm $alg: /"
done

echo
echo "== bytes per timeline event: conflux train, trainers on h0,h1, worker on h2 =="
on_head "$MPI_LAUNCHER" -np 3 --host h0,h1,h2 "$BIN/conflux" train --set "data.dir=$CONFLUX_DATA" \
  --config configs/mnist_mlp.toml --set train.epochs=1 --set data.train_limit=6000 \
  --set data.test_limit=1000 --set data.offload_ratio=0.5 --set data.audit=true \
  --set "run.dir=$run_dir" >"$OUT/train.log" 2>&1
events=$(sed -n 's/.*timeline: \([0-9]*\) events.*/\1/p' "$OUT/train.log" | tail -1)
bytes=$(stat -c %s "$run_dir/timeline.json")
event_bytes=$((bytes / events))
echo "timeline.json: $bytes bytes, $events events: $event_bytes bytes per event"

offload=()
[ -f bench-results/cluster_offload.json ] && offload=(--offload bench-results/cluster_offload.json)
echo
"$BENCH" scale-model --tcp "$OUT/tcp_net.json" --shm "$OUT/tcp_shm.json" "${checks[@]}" \
  "${offload[@]}" --event-bytes "$event_bytes" --json "$OUT/scale_model.json" |
  tee bench-results/cluster_scale.txt
