#!/usr/bin/env bash
# Benchmark: does a profile at several BLAS thread counts predict held-out multi-thread points?
# 1. profiles CONFIG (default the MNIST MLP) at 1 and 2 BLAS threads per trainer (this machine
#    has 2 cores) over M 884, 1327, 1769, 2654, 3538 MB (0.5..2 vCPUs) x B 64, 256 (one trainer;
#    points above threads x 1769 MB are left out of that count's fit: the threads cannot use
#    the share),
# 2. fits one T_train per thread count (`conflux fit`),
# 3. trains held-out 2-thread configurations (no M/B combination among them was profiled) for
#    one epoch under the same limits, three times each, and compares the median measured epoch
#    time with `conflux predict --set cluster.blas_threads=2` (target: within 10 %).
# Results: bench-results/plan-threads.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/plan_lib.sh
source benchmarks/plan_lib.sh
plan_bench_setup plan-threads
CONFIG=${1:-configs/mnist_mlp.toml}

echo "== profile $CONFIG: threads 1,2 x M 884,1327,1769,2654,3538 MB x B 64,256" | tee -a "$REPORT"
"${MPIRUN[@]}" -np 1 "$BIN/conflux" profile --config "$CONFIG" --set run.dir=\""$WORK/profile"\" \
  --threads 1,2 --memory 884,1327,1769,2654,3538 --batch 64,256 --seconds 2 \
  --output "$WORK/profile.toml" 2>&1 | grep -E 'W=1 M=' | tee -a "$REPORT"
"$BIN/conflux" fit --profile "$WORK/profile.toml" --output "$WORK/model.toml" | tee -a "$REPORT"

# Held-out 2-thread configurations: M B samples-per-epoch.
heldout=("1100 128 25600" "2200 96 19200" "3000 192 38400" "3400 48 9600")
rows=()
for h in "${heldout[@]}"; do
  read -r m b n <<<"$h"
  result=$(heldout_epochs "$CONFIG" "$WORK/model.toml" 1 --set cluster.trainers=1 \
    --set cluster.workers=0 --set cluster.blas_threads=2 --set limits.memory_mb="$m" \
    --set train.batch_size="$b" --set data.train_limit="$n" --set train.epochs=1)
  rows+=("1 $m $b $n $result")
done
heldout_report "held-out 2-thread configurations (not profiled)" "${rows[@]}"
