#!/usr/bin/env bash
# Benchmark: the conflux-bench scenarios that write JSON and plots, on this machine.
#  - scaling:   data-service samples/s with 0..N worker ranks (1 trainer whose compute is a
#               SIMULATED GPU step, a sleep; heavy CIFAR-10 augmentation);
#  - grad-sync: gradient allreduce time and bandwidth over all ranks, for the MNIST MLP and
#               CIFAR-10 CNN parameter counts and a message-size sweep;
#  - train:     the real training job (1 trainer + the other ranks as workers, heavy CIFAR-10
#               augmentation, half of the batches from the workers), samples/s per epoch;
#  - offload:   data.offload_ratio = "auto" against fixed ratios (input-bound, compute-bound,
#               drift), SIMULATED GPU step; about 6 minutes;
#  - profiler:  the profiler's and timeline's cost (2 trainer ranks, MNIST MLP);
#  - planner:   the exact planner's full-space query time (1 rank; the model that
#               benchmarks/plan_accuracy.sh fitted when it has run, else a built-in one).
# BENCH_RANKS (default 3) ranks each. Results:
# bench-results/{scaling,grad_sync,train,offload,profiler,planner}.{txt,json,png}
# (the plots need gnuplot; `make bench-deps` installs gnuplot-nox).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
DATA=$CONFLUX_DATA
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
RANKS=${BENCH_RANKS:-3}
OUT=bench-results
mkdir -p "$OUT"

run() {  # NAME SCENARIO [options...]: prints, keeps the text, writes NAME.json and NAME.png
  local name=$1 scenario=$2
  shift 2
  echo "== conflux-bench $scenario ($RANKS ranks)"
  "${MPIRUN[@]}" -np "$RANKS" "$BENCH" "$scenario" --json "$OUT/$name.json" \
    --plot "$OUT/$name.png" "$@" | tee "$OUT/$name.txt"
  echo
}

run scaling scaling --data-dir "$DATA"
run grad_sync grad-sync --set "data.dir=$DATA"
run train train --config configs/cifar10_heavy_service.toml --set "data.dir=$DATA" \
  --dir "$OUT/train-run"
run offload offload --data-dir "$DATA"
RANKS=2 run profiler profiler --set "data.dir=$DATA" --set train.epochs=2
model=()
[ -f "$OUT/plan-model-mnist_mlp.toml" ] && model=(--model "$OUT/plan-model-mnist_mlp.toml")
RANKS=1 run planner planner "${model[@]}"
