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
REPORT=$OUT/plan-accuracy.txt
: >"$REPORT"
name=$(basename "$CONFIG" .toml)
common=(--set train.eval=false --set checkpoint.final=false --set profile.timeline=false)

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
  predicted=$("$BIN/conflux" predict --model "$OUT/plan-model-$name.toml" --config "$CONFIG" \
    "${set_args[@]}" | sed -n 's/^predicted epoch: \([0-9.]*\) s.*/\1/p')
  measured=()
  for run in 1 2 3; do
    dir="$WORK/run-$w-$m-$b-$run"
    "${MPIRUN[@]}" -np "$w" "$BIN/conflux" train --config "$CONFIG" "${set_args[@]}" "${common[@]}" \
      --set run.dir=\""$dir"\" >"$dir.log" 2>&1 || {
      cat "$dir.log"
      exit 3
    }
    measured+=("$(sed -n 's/.*"epoch_seconds": \([0-9.e+-]*\),.*/\1/p' "$dir/metrics.jsonl")")
  done
  median=$(printf '%s\n' "${measured[@]}" | sort -g | sed -n 2p)
  rows+=("$w $m $b $n $predicted $median ${measured[*]}")
done

{
  echo
  echo "== held-out configurations (not profiled): predicted vs measured epoch (median of 3)"
  printf '%3s %7s %6s %8s %11s %11s %8s   %s\n' W "M MB" "B" samples "predicted s" \
    "measured s" "error %" "runs (s)"
  for r in "${rows[@]}"; do
    read -r w m b n p med r1 r2 r3 <<<"$r"
    awk -v w="$w" -v m="$m" -v b="$b" -v n="$n" -v p="$p" -v med="$med" -v runs="$r1 $r2 $r3" \
      'BEGIN { printf "%3d %7d %6d %8d %11.3f %11.3f %+8.1f   %s\n", w, m, b, n, p, med, 100 * (p - med) / med, runs }'
  done
} | tee -a "$REPORT"
errors=$(for r in "${rows[@]}"; do
  read -r _ _ _ _ p med _ <<<"$r"
  awk -v p="$p" -v med="$med" 'BEGIN { e = (p - med) / med; if (e < 0) e = -e; print 100 * e }'
done | sort -g)
count=$(wc -l <<<"$errors")
median_error=$(awk -v c="$count" '{ v[NR] = $1 } END { if (c % 2) print v[(c + 1) / 2]; else print (v[c / 2] + v[c / 2 + 1]) / 2 }' <<<"$errors")
echo "median absolute error over $count held-out configurations: $median_error % (target <= 10 %)" |
  tee -a "$REPORT"
