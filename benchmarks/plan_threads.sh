#!/usr/bin/env bash
# Benchmark: does a profile at several BLAS thread counts predict held-out multi-thread points?
# 1. profiles CONFIG (default the MNIST MLP) at 1 and 2 BLAS threads per trainer (this machine
#    has 2 cores) over M 884, 1327, 1769, 2654, 3538 MB (0.5..2 vCPUs) x B 64, 256 (one trainer; points above
#    threads x 1769 MB are left out of that count's fit: the threads cannot use the share),
# 2. fits one T_train per thread count (`conflux fit`),
# 3. trains held-out 2-thread configurations (no M/B combination among them was profiled) for
#    one epoch under the same limits, three times each, and compares the median measured epoch
#    time with `conflux predict --set cluster.blas_threads=2` (target: within 10 %).
# Results: bench-results/plan-threads.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
BIN=${CONFLUX_BIN:-build/bin}
CONFIG=${1:-configs/mnist_mlp.toml}
OUT=bench-results
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
REPORT=$OUT/plan-threads.txt
: >"$REPORT"
common=(--set train.eval=false --set checkpoint.final=false --set profile.timeline=false)

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
  set_args=(--set cluster.trainers=1 --set cluster.workers=0 --set cluster.blas_threads=2
    --set limits.memory_mb="$m" --set train.batch_size="$b" --set data.train_limit="$n"
    --set train.epochs=1)
  predicted=$("$BIN/conflux" predict --model "$WORK/model.toml" --config "$CONFIG" \
    "${set_args[@]}" | sed -n 's/^predicted epoch: \([0-9.]*\) s.*/\1/p')
  measured=()
  for run in 1 2 3; do
    dir="$WORK/run-$m-$b-$run"
    "${MPIRUN[@]}" -np 1 "$BIN/conflux" train --config "$CONFIG" "${set_args[@]}" "${common[@]}" \
      --set run.dir=\""$dir"\" >"$dir.log" 2>&1 || {
      cat "$dir.log"
      exit 3
    }
    measured+=("$(sed -n 's/.*"epoch_seconds": \([0-9.e+-]*\),.*/\1/p' "$dir/metrics.jsonl")")
  done
  median=$(printf '%s\n' "${measured[@]}" | sort -g | sed -n 2p)
  rows+=("$m $b $n $predicted $median ${measured[*]}")
done

{
  echo
  echo "== held-out 2-thread configurations (not profiled): predicted vs measured epoch (median of 3)"
  printf '%7s %6s %8s %11s %11s %8s   %s\n' "M MB" B samples "predicted s" "measured s" "error %" \
    "runs (s)"
  for r in "${rows[@]}"; do
    read -r m b n p med r1 r2 r3 <<<"$r"
    awk -v m="$m" -v b="$b" -v n="$n" -v p="$p" -v med="$med" -v runs="$r1 $r2 $r3" \
      'BEGIN { printf "%7d %6d %8d %11.3f %11.3f %+8.1f   %s\n", m, b, n, p, med, 100 * (p - med) / med, runs }'
  done
} | tee -a "$REPORT"
