#!/usr/bin/env bash
# Benchmark: does `conflux plan` place preprocessing right for an input-bound job, and does the
# planned job run at the throughput the plan predicts (target: within 15 %)?
# 1. makes an ImageNet-like image folder from CIFAR-10 (JPEGs upscaled to 200-500 px, a
#    stand-in for ImageNet, decoded and cropped to 32 px: decoding dominates the step),
# 2. profiles a small CNN on it (W 1 x M 442..1769 MB x B 16, 32; the profile also times one
#    batch build on one thread), fits the model,
# 3. plans on the SLURM target with at most one data worker (this machine has 2 cores: one for
#    the trainer, one for the worker) and a deadline below what the trainer alone predicts, so
#    that the plan needs the worker,
# 4. trains the emitted config three times (1 trainer + the planned workers, the planned offload
#    ratio) and the trainer alone, comparing measured samples/s (median over epochs 2-5, median
#    of 3 runs) with the plan's prediction.
# Results: bench-results/plan-input-bound.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benchmarks/plan_lib.sh
source benchmarks/plan_lib.sh
plan_bench_setup plan-input-bound
CONFIG=configs/imagefolder_input_bound.toml

echo "== image folder: 4096 + 256 CIFAR-10 images upscaled to 200-500 px JPEGs (an ImageNet stand-in)" |
  tee -a "$REPORT"
"$BIN/conflux-bench" make-images --data "$CONFLUX_DATA" --out "$WORK/folder" --train 4096 --val 256 \
  --size 200-500 >"$WORK/make.log" 2>&1 || {
  cat "$WORK/make.log"
  exit 3
}
# The generated folder, and nothing but training measured (the plan bakes these into its config).
base=(--set data.path=\""$WORK/folder"\" --set train.eval=false --set checkpoint.final=false
  --set profile.timeline=false)

echo "== profile: W 1 x M 442,884,1327,1769 MB x B 16,32" | tee -a "$REPORT"
"${MPIRUN[@]}" -np 1 "$BIN/conflux" profile --config "$CONFIG" "${base[@]}" --set run.dir=\""$WORK/profile"\" \
  --workers 1 --memory 442,884,1327,1769 --batch 16,32 --seconds 1 --output "$WORK/profile.toml" \
  2>&1 | grep -E 'building a batch|W=1' | tee -a "$REPORT"
"$BIN/conflux" fit --profile "$WORK/profile.toml" --output "$WORK/model.toml" | tee -a "$REPORT"

space=(--model "$WORK/model.toml" --config "$CONFIG" "${base[@]}" --target slurm --epochs 5 --max-workers 1
  --batches 32 --min-memory 442 --max-memory 1769)
alone=$("$BIN/conflux" plan "${space[@]}" --deadline 1000 --max-data-workers 0 | tee "$WORK/alone.txt")
rate=$(sed -n 's/^  throughput: \([0-9]*\) samples\/s$/\1/p' <<<"$alone")
alone_s=$(awk -v r="$rate" 'BEGIN { printf "%.2f", 5 * 4096 / r }')  # 5 epochs of 4096
deadline=$(awk -v t="$alone_s" 'BEGIN { printf "%.2f", 0.75 * t }')
echo "== plan: the trainer alone is predicted $alone_s s for 5 epochs; deadline $deadline s" |
  tee -a "$REPORT"
"$BIN/conflux" plan "${space[@]}" --deadline "$deadline" --max-data-workers 1 \
  --emit-config "$WORK/planned.toml" --emit-sbatch "$WORK/planned.sbatch" | tee -a "$REPORT"
tee -a "$REPORT" <"$WORK/planned.sbatch"
workers=$(sed -n 's/^workers = \([0-9]*\)$/\1/p' "$WORK/planned.toml")
predicted=$(sed -n 's/^  throughput: \([0-9]*\) samples\/s$/\1/p' "$REPORT" | tail -1)
predicted_alone=$(sed -n 's/^  throughput: \([0-9]*\) samples\/s$/\1/p' "$WORK/alone.txt")

# Median samples/s of epochs 2..5 of one run.
epoch_rate() {
  python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
rates = [r["samples_per_s"] for r in map(json.loads, open(sys.argv[1])) if "train_loss" in r and "epoch" in r and "step" not in r]
print(f"{statistics.median(rates[1:]):.0f}")
PY
}
run_rate() {  # NAME RANKS [--set ...]
  local dir=$WORK/run-$1
  "${MPIRUN[@]}" -np "$2" "$BIN/conflux" train --config "$WORK/planned.toml" --set train.epochs=5 \
    --set run.dir=\""$dir"\" "${@:3}" >"$dir.log" 2>&1 || {
    cat "$dir.log"
    exit 3
  }
  epoch_rate "$dir"
}
planned=() single=()
for run in 1 2 3; do
  rate=$(run_rate "planned-$run" $((1 + workers)))
  planned+=("$rate")
  rate=$(run_rate "alone-$run" 1 --set cluster.workers=0 --set data.offload_ratio=0)
  single+=("$rate")
done
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
{
  echo
  echo "== measured samples/s (median of epochs 2-5; median of 3 runs) against the plan"
  printf '%-28s %10s %10s %8s   %s\n' configuration predicted measured "error %" runs
  for row in "planned: 1 trainer + $workers worker|$predicted|$(median3 "${planned[@]}")|${planned[*]}" \
    "trainer alone|$predicted_alone|$(median3 "${single[@]}")|${single[*]}"; do
    IFS='|' read -r name p m runs <<<"$row"
    awk -v n="$name" -v p="$p" -v m="$m" -v r="$runs" \
      'BEGIN { printf "%-28s %10d %10d %+8.1f   %s\n", n, p, m, 100 * (p - m) / m, r }'
  done
} | tee -a "$REPORT"
