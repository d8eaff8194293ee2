#!/usr/bin/env bash
# Benchmark: end-to-end training throughput on one GPU by input pipeline, from a packed JPEG
# data set on local disk (docs/gpu-input-pipeline.md). ResNet-50 (then ResNet-18, if time
# is left) in bf16, the same global batch, fed by
#   conflux  `mpirun -np 1+W conflux train`: one GPU trainer rank (1 preprocessing thread) and
#            W worker ranks (1 thread each), at fixed data.offload_ratio values, then "auto";
#   PyTorch  benchmarks/pytorch_gpu_input.py: torch DataLoader with W worker processes, PIL
#            decode, RandomResizedCrop + flip + normalise, torchvision's model, autocast bf16,
#            channels_last, cudnn.benchmark, reading the same pack;
#   DALI     not run: its wheel does not fit the device tool's carry (docs, "DALI").
# for W in WORKERS. Per point: samples/s after the warm-up, data wait per step, GPU
# utilisation (nvidia-smi) and busy CPU cores (/proc/stat), by benchmarks/gpu_input_lib.py.
# The data set is made first: `conflux-bench make-images` (with --like imagenet when its --help
# lists it, else --size 200-500), in parallel parts, then `conflux data pack`.
#
# Points run in a priority order, each under a time limit, and what does not fit BUDGET_S is
# skipped with a row saying so:
#   1. conflux at the ratio W/(W+1) (the trainer's thread and W workers share the batches
#      evenly), W from the most workers down;  2. PyTorch at every W (one process);
#   3. conflux auto at every W >= 1;  4. conflux at ratios 1.0 and 0.5;  5. ResNet-18: PyTorch
#   and conflux auto at the two largest W. Phase 1 takes at most half of what is left, and no
#   PyTorch worker count starts after 60 % of what is left after it.
# Writes OUTDIR/results.md, results.csv, rows.jsonl, env.txt, samples_per_s.png (with
# matplotlib), logs/ and work/ (data set, configs, runs; the data set is deleted at the end).
#
# Usage: benchmarks/gpu_input_pipeline.sh OUTDIR
# Environment (defaults in brackets; SMOKE=1 ones after the semicolon):
#   DEVICE       cuda | cpu [cuda]: cpu trains on the CPU (with SMOKE=1: a test of the script)
#   SMOKE        1: tiny everything (32 px crops, batch 4, 64 images, W in 2,1,0) [0]
#   BUDGET_S     seconds for the whole script [360; 150]
#   WORKERS      worker counts, the most important first [15,8,4,2,1,0; 2,1,0]
#   BATCH        global batch [256; 4]       IMAGE_SIZE  crop size [224; 32]
#   WARMUP, STEPS, MIN_STEPS  steps unmeasured, most measured, least measured [5, 30, 3; 1, 3, 2]
#   MEASURE_S    a point stops measuring after this many seconds (at least MIN_STEPS) [10; 3]
#   POINT_LIMIT_S  most seconds one conflux point may take, start-up included [60; 40]
#   IMAGES       training images in the pack (rounded up to a multiple of BATCH) [BATCH x
#                (WARMUP + STEPS + 7): one epoch per point, 10752; 64]
#   CLASSES      class folders with --like imagenet [100]
#   MODELS       resnet50[,resnet18] [resnet50,resnet18; resnet18]
#   CONFLUX_BIN  [build/bin]   PYTHON  python3 with torch, torchvision, PIL, h5py [the first of
#                python3, /usr/bin/python3 that imports them]
#   GPU_INPUT_CIFAR  a file of whole CIFAR-10 records (the head of data_batch_1.bin) used when
#                $CONFLUX_DATA/cifar-10 is missing, as on the GPU host [gpudata/cifar-10-head.bin]
# Exit: 0 when the report was written (failed points are rows), 2 on bad input, 3 when the data
# set could not be made.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3
die() { echo "gpu_input_pipeline: $*" >&2; exit "${2:-2}"; }
if [ $# -ne 1 ] || [ -z "$1" ]; then die "usage: benchmarks/gpu_input_pipeline.sh OUTDIR"; fi
DEVICE=${DEVICE:-cuda}
SMOKE=${SMOKE:-0}
case "$DEVICE" in cuda | cpu) ;; *) die "DEVICE=$DEVICE: expected cuda or cpu" ;; esac
case "$SMOKE" in 0 | 1) ;; *) die "SMOKE=$SMOKE: expected 0 or 1" ;; esac
pick() { if [ "$SMOKE" = 1 ]; then echo "$2"; else echo "$1"; fi; }
BUDGET_S=${BUDGET_S:-$(pick 360 150)}
WORKERS=${WORKERS:-$(pick 15,8,4,2,1,0 2,1,0)}
BATCH=${BATCH:-$(pick 256 4)}
IMAGE_SIZE=${IMAGE_SIZE:-$(pick 224 32)}
WARMUP=${WARMUP:-$(pick 5 1)}
STEPS=${STEPS:-$(pick 30 3)}
MIN_STEPS=${MIN_STEPS:-$(pick 3 2)}
MEASURE_S=${MEASURE_S:-$(pick 10 3)}
POINT_LIMIT_S=${POINT_LIMIT_S:-$(pick 60 40)}
IMAGES=${IMAGES:-$(pick auto 64)}
CLASSES=${CLASSES:-100}
MODELS=${MODELS:-$(pick resnet50,resnet18 resnet18)}
GPU_INPUT_CIFAR=${GPU_INPUT_CIFAR:-gpudata/cifar-10-head.bin}
# auto: one epoch holds every step of a point (no epoch boundary inside the measurement).
[ "$IMAGES" = auto ] && IMAGES=$((BATCH * (WARMUP + 5 + STEPS + 2)))
for v in BUDGET_S BATCH IMAGE_SIZE WARMUP STEPS MIN_STEPS MEASURE_S POINT_LIMIT_S IMAGES CLASSES; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v}: expected a positive integer"
done
[[ $WORKERS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "WORKERS=$WORKERS: expected e.g. 15,8,4,2,1,0"
IFS=, read -r -a workers <<<"$WORKERS"
IFS=, read -r -a models <<<"$MODELS"
for m in "${models[@]}"; do
  case "$m" in resnet50 | resnet18) ;; *) die "MODELS: unknown model '$m' (resnet50, resnet18)" ;; esac
done
PRECISION=$([ "$DEVICE" = cuda ] && echo bf16 || echo fp32)
export CONFLUX_BIN=${CONFLUX_BIN:-build/bin}
[ -x "$CONFLUX_BIN/conflux" ] || die "$CONFLUX_BIN/conflux not found (set CONFLUX_BIN)"
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
mkdir -p "$1" || die "cannot create $1"
OUT=$(cd "$1" && pwd)
WORK=$OUT/work
rm -rf "$WORK" "$OUT/logs" && mkdir -p "$WORK" "$OUT/logs"
ROWS=$OUT/rows.jsonl
NOTES=$WORK/notes.md
: >"$ROWS"
: >"$NOTES"
LIB=(python3 benchmarks/gpu_input_lib.py)
start=$(date +%s)
deadline=$((start + BUDGET_S))
left() { echo $((deadline - $(date +%s))); }
# The conflux points of a phase end by phase_end (epoch seconds), so that a slow phase leaves
# the next ones their share; share F sets it to F of what is left.
phase_end=$deadline
share() { phase_end=$(($(date +%s) + $(left) * $1 / 100)); }
note() { echo "- $*" >>"$NOTES"; echo "gpu_input_pipeline: $*" >&2; }
trap 'rm -rf "$WORK/images" "$WORK"/parts "$WORK/pack" "$WORK"/runs/*/checkpoints "$WORK"/runs/*/model.h5' EXIT

# PyTorch gets the host's library path back: the bundle's env.sh puts its own lib/ first.
TORCH_ENV=(env "LD_LIBRARY_PATH=${CONFLUX_HOST_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}")
TORCH_IMPORTS='import torch, torchvision, PIL, h5py'
if [ -z "${PYTHON:-}" ]; then  # as benchmarks/gpu_vs_torch.sh: the first that has torch
  for candidate in python3 /usr/bin/python3; do
    "${TORCH_ENV[@]}" "$candidate" -c "$TORCH_IMPORTS" 2>/dev/null && PYTHON=$candidate && break
  done
  PYTHON=${PYTHON:-python3}
fi
if why=$("${TORCH_ENV[@]}" "$PYTHON" -c "$TORCH_IMPORTS" 2>&1); then
  have_torch=1
else
  have_torch=0
  note "PyTorch rows skipped: $PYTHON cannot import torch, torchvision, PIL and h5py ($(tail -1 <<<"$why"))"
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "mode: DEVICE=$DEVICE SMOKE=$SMOKE BUDGET_S=$BUDGET_S WORKERS=$WORKERS BATCH=$BATCH IMAGE_SIZE=$IMAGE_SIZE WARMUP=$WARMUP STEPS=$STEPS MIN_STEPS=$MIN_STEPS MEASURE_S=$MEASURE_S POINT_LIMIT_S=$POINT_LIMIT_S IMAGES=$IMAGES PRECISION=$PRECISION"
  echo "conflux: $("$CONFLUX_BIN/conflux" --version 2>&1 | head -1) ($(cat "$CONFLUX_BIN/.flavor" 2>/dev/null))"
  echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p') ($(nproc) cores)"
  [ "$have_torch" = 1 ] && "${TORCH_ENV[@]}" "$PYTHON" -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__)'
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# --- the data set ------------------------------------------------------------------------------
IMAGES=$(((IMAGES + BATCH - 1) / BATCH * BATCH))
t_data=$(date +%s)
cifar_dir=$CONFLUX_DATA
if [ ! -f "$cifar_dir/cifar-10/data_batch_1.bin" ]; then
  [ -f "$GPU_INPUT_CIFAR" ] || die "no CIFAR-10 for make-images: neither $CONFLUX_DATA/cifar-10/data_batch_1.bin nor GPU_INPUT_CIFAR=$GPU_INPUT_CIFAR (docs/gpu-input-pipeline.md, 'Running it')" 3
  cifar_dir=$WORK/cifar
  "${LIB[@]}" tile-cifar "$GPU_INPUT_CIFAR" "$cifar_dir/cifar-10/data_batch_1.bin" || die "tile-cifar failed" 3
  note "make-images' base images: the $(($(stat -c %s "$GPU_INPUT_CIFAR") / 3073)) CIFAR-10 records of $GPU_INPUT_CIFAR, repeated to 10000"
fi
if "$CONFLUX_BIN/conflux-bench" make-images --help 2>&1 | grep -q -- '--like'; then
  kind=(--like imagenet --classes "$CLASSES")
  note "data set: \`conflux-bench make-images --like imagenet --classes $CLASSES\` (ImageNet-like sizes and JPEG statistics), $IMAGES train images"
else
  kind=(--size 200-500)
  CLASSES=10
  note "data set: \`conflux-bench make-images --size 200-500\` (this build's make-images has no --like imagenet): CIFAR-10 images upscaled to 200-500 px sides, 10 classes, $IMAGES train images; smaller and smoother JPEGs than ImageNet's, so decoding is cheaper than on ImageNet"
fi
# Parts of different --seeds (so different drawn sizes), each within one CIFAR-10 batch file.
parts=$(nproc)
[ "$parts" -gt 16 ] && parts=16
[ "$parts" -lt $(((IMAGES + 9999) / 10000)) ] && parts=$(((IMAGES + 9999) / 10000))
per=$(((IMAGES + parts - 1) / parts))
[ "${kind[0]}" = --like ] && [ "$per" -lt "$CLASSES" ] && per=$CLASSES
pids=()
for ((k = 0; k < parts; k++)); do
  "$CONFLUX_BIN/conflux-bench" make-images --data-dir "$cifar_dir" --out "$WORK/parts/$k" \
    --train "$per" --val 0 --seed $((k + 1)) "${kind[@]}" >"$OUT/logs/make-images-$k.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || die "make-images failed: see $OUT/logs/make-images-*.log" 3; done
"${LIB[@]}" merge-parts "$WORK/images" "$WORK"/parts/* || die "merging the parts failed" 3
"$CONFLUX_BIN/conflux" data pack --dataset image-folder --path "$WORK/images" --out "$WORK/pack" \
  --splits train >"$OUT/logs/pack.log" 2>&1 || die "conflux data pack failed: $(tail -3 "$OUT/logs/pack.log")" 3
rm -rf "$WORK/images" "$WORK/parts"
pack_bytes=$(du -sb "$WORK/pack" | cut -f1)
samples=$(sed -n 's/^wrote .*: \([0-9]*\) samples.*/\1/p' "$OUT/logs/pack.log")
note "pack: $samples samples, $((pack_bytes / 1000000)) MB ($((pack_bytes / ${samples:-1} / 1000)) kB a file), made in $(($(date +%s) - t_data)) s with $parts parallel make-images"
note "conflux reads the pack (\`data.dataset = \"packed\"\`); PyTorch reads the same pack (index.h5 with h5py, then one os.pread per sample, as conflux)"
note "DALI rows skipped: nvidia-dali-cuda130 2.4.0's wheel is 198,655,209 bytes (189 MiB; pip download, 2026-11-28), over the 64 MiB the device tool carries per call, and no DALI pipeline is implemented here"

# --- conflux -----------------------------------------------------------------------------------
config_for() {  # model -> a copy of its config whose last layer has CLASSES outputs
  local src=configs/imagenet_resnet50.toml dest=$WORK/$1.toml
  [ "$1" = resnet18 ] && src=configs/imagefolder_resnet18.toml
  awk -v k="$CLASSES" '{l[NR]=$0} /^out = [0-9]+$/{last=NR} END{for(i=1;i<=NR;i++) print (i==last ? "out = " k : l[i])}' "$src" >"$dest"
  echo "$dest"
}
skip_row() {  # model pipeline workers ratio
  printf '{"model": "%s", "pipeline": "%s", "workers": %s, "ratio": "%s", "status": "skipped", "message": "the budget of %s s (or its phase'"'"'s share) was spent"}\n' \
    "$1" "$2" "$3" "$4" "$BUDGET_S" >>"$ROWS"
}
conflux_point() {  # model workers ratio
  local model=$1 w=$2 ratio=$3 warm=$WARMUP extra=() limit run ratio_set
  limit=$((phase_end - $(date +%s)))
  [ "$limit" -gt $(($(left) - 15)) ] && limit=$(($(left) - 15))
  [ "$limit" -gt "$POINT_LIMIT_S" ] && limit=$POINT_LIMIT_S
  if [ "$limit" -lt 15 ]; then skip_row "$model" conflux "$w" "$ratio"; return; fi
  if [ "$ratio" = auto ]; then
    # The controller's start-up (ratio 0, then its measurement) shortened and left unmeasured.
    extra=(--set profile.initial_steps=2 --set profile.steps=3)
    warm=$((WARMUP + 5))
    ratio_set='"auto"'
  else
    ratio_set=$ratio
  fi
  run=$WORK/runs/$model-w$w-r$ratio
  rm -rf "$run"
  # The run ends by itself about 2 steps after the last measured one (conflux_point in
  # gpu_input_lib.py stops a slower one once MEASURE_S seconds were measured): E epochs of the
  # pack's first samples.
  local steps_total=$((warm + STEPS + 2)) per_epoch=$((IMAGES / BATCH)) epochs steps_each
  epochs=$(((steps_total + per_epoch - 1) / per_epoch))
  steps_each=$(((steps_total + epochs - 1) / epochs))
  local length=(--set "train.epochs=$epochs" --set "data.train_limit=$((steps_each * BATCH))")
  echo "== $model conflux W=$w ratio=$ratio (limit ${limit}s)"
  "${LIB[@]}" conflux --json "$ROWS" --log "$OUT/logs/$model-conflux-w$w-r$ratio.log" \
    --steps-file "$run/steps.jsonl" --model "$model" --workers "$w" --ratio "$ratio" \
    --batch "$BATCH" --warmup "$warm" --steps "$STEPS" --min-steps "$MIN_STEPS" \
    --measure-s "$MEASURE_S" --limit-s "$limit" -- \
    "${MPIRUN[@]}" -np $((1 + w)) "$CONFLUX_BIN/conflux" train --config "$(config_for "$model")" \
    --set data.dataset='"packed"' --set data.path="\"$WORK/pack\"" --set data.test_split='"train"' \
    --set train.eval=false --set train.device="\"$([ "$DEVICE" = cuda ] && echo gpu || echo cpu)\"" \
    --set train.precision="\"$PRECISION\"" --set train.batch_size="$BATCH" \
    --set transform.resized_crop="$IMAGE_SIZE" --set train.log_every=1 \
    "${length[@]}" \
    --set cluster.trainers=1 --set cluster.workers="$w" --set cluster.preprocess_threads=1 \
    --set cluster.worker_threads=1 --set cluster.blas_threads=1 \
    --set data.offload_ratio="$ratio_set" --set checkpoint.final=false \
    --set checkpoint.keep=1 --set profile.tensorboard=false --set profile.timeline=false \
    --set run.dir="\"$run\"" "${extra[@]}" || echo "   (the conflux point's runner failed)"
}
fixed_ratio() { awk -v w="$1" 'BEGIN{printf "%.2f", w / (w + 1)}'; }

# --- PyTorch -----------------------------------------------------------------------------------
torch_points() {  # model workers-list
  local model=$1 list=$2 limit start_by=$((deadline - 10))
  [ "$phase_end" -lt "$start_by" ] && start_by=$phase_end
  limit=$(($(left) - 10))
  if [ "$have_torch" = 0 ] || [ "$limit" -lt 20 ]; then
    local why="the budget of $BUDGET_S s was spent"
    [ "$have_torch" = 0 ] && why="$PYTHON cannot import torch, torchvision, PIL and h5py"
    for w in ${list//,/ }; do
      printf '{"model": "%s", "pipeline": "pytorch", "workers": %s, "ratio": "-", "status": "skipped", "message": "%s"}\n' \
        "$model" "$w" "$why" >>"$ROWS"
    done
    return
  fi
  echo "== $model PyTorch DataLoader W in $list (limit ${limit}s)"
  local code=0 status=error
  timeout --kill-after=10 "$limit" "${TORCH_ENV[@]}" "$PYTHON" benchmarks/pytorch_gpu_input.py \
    --pack "$WORK/pack" --json "$ROWS" --workers "$list" --model "$model" --device "$DEVICE" \
    --batch "$BATCH" --image-size "$IMAGE_SIZE" --warmup "$WARMUP" --steps "$STEPS" \
    --min-steps "$MIN_STEPS" --measure-s "$MEASURE_S" --point-limit-s "$POINT_LIMIT_S" \
    --deadline "$start_by" >"$OUT/logs/$model-pytorch.log" 2>&1 || code=$?
  grep '^{' "$OUT/logs/$model-pytorch.log"
  if [ "$code" != 0 ]; then
    echo "   PyTorch process: exit $code (see $OUT/logs/$model-pytorch.log)"
    { [ "$code" = 124 ] || [ "$code" = 137 ]; } && status=timeout
    "${LIB[@]}" fill-missing --json "$ROWS" --model "$model" --pipeline pytorch --workers "$list" \
      --status "$status" --message "the PyTorch process ended (exit $code, limit ${limit} s) first: $(grep -v '^{' "$OUT/logs/$model-pytorch.log" | tail -2 | tr '\n"' ' ' | cut -c1-300)"
  fi
}

# --- the phases --------------------------------------------------------------------------------
main=${models[0]}
share 50  # phase 1: at most half of what is left
for w in "${workers[@]}"; do conflux_point "$main" "$w" "$(fixed_ratio "$w")"; done
share 60  # phase 2: no PyTorch worker count starts after 60 % of what is left then
torch_points "$main" "$WORKERS"
phase_end=$deadline
for w in "${workers[@]}"; do [ "$w" -gt 0 ] && conflux_point "$main" "$w" auto; done
for r in 1.0 0.5; do
  for w in "${workers[@]}"; do
    [ "$w" -gt 0 ] && [ "$(fixed_ratio "$w")" != "$r" ] && [ "$(fixed_ratio "$w")" != "${r}0" ] &&
      conflux_point "$main" "$w" "$r"
  done
done
if [ "${#models[@]}" -gt 1 ]; then
  second=${models[1]}
  top2=$(printf '%s\n' "${workers[@]}" | sort -rn | head -2 | paste -sd,)
  torch_points "$second" "$top2"
  for w in ${top2//,/ }; do conflux_point "$second" "$w" auto; done
fi

note "$(($(date +%s) - start)) s in all (BUDGET_S=$BUDGET_S)"
# The report may import matplotlib: with the host's libraries, as PyTorch.
"${TORCH_ENV[@]}" "$PYTHON" benchmarks/gpu_input_lib.py report --json "$ROWS" --out "$OUT" --notes "$NOTES" \
  --title "End-to-end training throughput by input pipeline ($PRECISION, batch $BATCH, $IMAGE_SIZE px$([ "$SMOKE" = 1 ] && echo ', SMOKE run: not a measurement'))" >/dev/null ||
  die "the report failed" 3
cat "$OUT/results.md"
