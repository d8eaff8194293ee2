#!/usr/bin/env bash
# Benchmark: does the performance model fitted from `conflux profile` predict real epochs?
# 1. profiles CONFIG (default the MNIST MLP) under Lambda-like limits over W x M x B,
# 2. fits the model (`conflux fit`),
# 3. trains held-out configurations (W, M, B none of which is a profiled grid point) for one
#    epoch under the same limits, three times each, and compares the median measured epoch
#    time with `conflux predict` (target: median absolute error <= 10 %).
# The epoch is shortened with data.train_limit; evaluation and checkpoints are off, because the
# model predicts training iterations only. Results: bench-results/plan-accuracy.{txt,toml}.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/plan_lib.sh
source benchmarks/plan_lib.sh
plan_bench_setup plan-accuracy
CONFIG=${1:-configs/mnist_mlp.toml}
name=$(basename "$CONFIG" .toml)

echo "== profile $CONFIG: W 1,2 x M 384,768,1152,1536 MB x B 16,64,256" | tee -a "$REPORT"
"${MPIRUN[@]}" -np 2 "$BIN/conflux" profile --config "$CONFIG" --set run.dir=\""$WORK/profile"\" \
  --workers 1,2 --memory 384,768,1152,1536 --batch 16,64,256 --seconds 2 \
  --output "$OUT/plan-profile-$name.toml" 2>&1 | grep -v 'gradient sync:' | tee -a "$REPORT"
"$BIN/conflux" fit --profile "$OUT/plan-profile-$name.toml" --output "$OUT/plan-model-$name.toml" |
  tee -a "$REPORT"

# Held-out configurations: W M B(per worker) samples-per-epoch.
heldout=(
  "1 640 48 12000"
  "1 1000 128 25600"
  "1 1400 24 9600"
  "2 512 32 12800"
  "2 900 96 25600"
  "2 1300 200 40000"
)
rows=()
for h in "${heldout[@]}"; do
  read -r w m b n <<<"$h"
  set_args=(--set cluster.trainers="$w" --set cluster.workers=0 --set limits.memory_mb="$m"
    --set train.batch_size=$((w * b)) --set data.train_limit="$n" --set train.epochs=1)
  result=$(heldout_epochs "$CONFIG" "$OUT/plan-model-$name.toml" "$w" "${set_args[@]}")
  rows+=("$w $m $b $n $result")
done

heldout_report "held-out configurations (not profiled)" "${rows[@]}"
