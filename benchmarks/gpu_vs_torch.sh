#!/usr/bin/env bash
# Benchmark: conflux's GPU trainer against PyTorch on the same GPU, same models, same batch
# and precision, the trainer alone on both sides (docs/gpu-benchmark.md). For ResNet-20 at
# 32 px (configs/cifar10_resnet20.toml, batch 512) and ResNet-18 and ResNet-50 at 224 px
# (configs/imagefolder_resnet18.toml, configs/imagenet_resnet50.toml, batch 256):
#   PyTorch (benchmarks/gpu_vs_torch.py, the model built from the conflux config by
#            tools/conflux_to_torch.py): eager bf16 (autocast), eager fp32 with TF32 off, and
#            torch.compile bf16; synthetic uint8 batches in pinned host memory, warm-up
#            excluded, CUDA-event step times, peak memory, GPU utilisation.
#   conflux  (gpu_vs_torch.py --system conflux): `conflux-bench trainer-step` with
#            train.device = "gpu", bf16 and fp32: the trainer's own model and GPU backend on
#            synthetic uint8 batches in pinned memory (uploaded and normalised on the device),
#            the same warm-up and measured steps, wall-clock samples/s, peak device memory,
#            GPU utilisation sampled the same way; or, when conflux refuses (exit 2 naming the
#            GPU, a layer or train.device), a row holding its message and no figures. Every
#            layer type has device kernels since issue 32, so the three models are expected
#            to run. Two variant rows (bf16): ResNet-20 with train.gpu_graphs = false, the
#            last model with train.gpu_deterministic = false, each against the default row.
# Three phases, so that a slow phase costs only its own rows: 1. the eager PyTorch rows of
# every model (one process per model), 2. the conflux rows, 3. the torch.compile rows (one
# process per model; the compile is the slow part). Every run has a timeout within an overall
# budget (GPU_VS_TORCH_BUDGET_S); the compile runs share what is left. A run that times out or
# fails leaves a row saying so. About 3 to 4 minutes on an H100/H200.
# Writes OUTDIR/gpu_vs_torch.jsonl (one row per line), OUTDIR/gpu_vs_torch.md (the table),
# OUTDIR/env.txt, OUTDIR/logs/ and OUTDIR/work/ (conflux's resolved configs, logs and
# trainer-step results; the small synthetic data sets that give the input shape are deleted
# at the end).
#
# Usage: benchmarks/gpu_vs_torch.sh OUTDIR
# Environment (defaults in brackets):
#   GPU_VS_TORCH_DEVICE  cuda | cpu [cuda]; cpu: a smoke run of the whole script on the CPU
#                        (tiny batches, 1 warm-up and 2 measured steps, conflux rows with
#                        train.device = "cpu", which computes in fp32 whatever the row's
#                        precision): a test of the script, not a figure
#   GPU_VS_TORCH_BUDGET_S  seconds for the whole script [270]
#   PYTHON               the interpreter with torch [the first of python3, /usr/bin/python3
#                        that imports torch]
#   CONFLUX_BIN          directory of the conflux and conflux-bench binaries [build/bin]
#   RESOLVED_DIR         directory of configs resolved beforehand (`conflux config check
#                        --config C > RESOLVED_DIR/$(basename C)`; an image-folder config needs
#                        its data, or --set data.dataset/path to stand-in data), for a host
#                        where the conflux binary cannot run: the PyTorch rows then need none
#   MODELS               which of resnet20,resnet18,resnet50 [all three]
#   WARMUP, STEPS        unmeasured and measured steps of the eager PyTorch rows and of the
#                        conflux rows [5, 20; cpu: 1, 2]
#   COMPILE_WARMUP       unmeasured steps of the compiled rows, the compile included [8]
#   BATCH_32PX, BATCH_224PX  batch sizes [512, 256; cpu: 8, 2]
#   IMAGE_SIZE           replaces the 224 px crop of ResNet-18/50 (tests only) [the config's]
#   EAGER_TIMEOUT, CONFLUX_TIMEOUT  seconds per model for phases 1 and 2 [90, 60]
#   CONFLUX_DEVICE       train.device of the conflux rows [gpu; cpu mode: cpu]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: benchmarks/gpu_vs_torch.sh OUTDIR}
DEVICE=${GPU_VS_TORCH_DEVICE:-cuda}
case "$DEVICE" in
  cuda) small=0 ;;
  cpu) small=1 ;;
  *) echo "gpu_vs_torch: GPU_VS_TORCH_DEVICE=$DEVICE: expected cuda or cpu" >&2; exit 2 ;;
esac
pick() { if [ $small = 1 ]; then echo "$2"; else echo "$1"; fi; }  # GPU value, CPU value
BUDGET=${GPU_VS_TORCH_BUDGET_S:-270}
WARMUP=${WARMUP:-$(pick 5 1)}
STEPS=${STEPS:-$(pick 20 2)}
COMPILE_WARMUP=${COMPILE_WARMUP:-8}
BATCH_32PX=${BATCH_32PX:-$(pick 512 8)}
BATCH_224PX=${BATCH_224PX:-$(pick 256 2)}
IMAGE_SIZE=${IMAGE_SIZE:-0}
EAGER_TIMEOUT=${EAGER_TIMEOUT:-90}
CONFLUX_TIMEOUT=${CONFLUX_TIMEOUT:-60}
CONFLUX_DEVICE=${CONFLUX_DEVICE:-$(pick gpu cpu)}
MODELS=${MODELS:-resnet20,resnet18,resnet50}
export CONFLUX_BIN=${CONFLUX_BIN:-build/bin}
threads=$(nproc)
start=$(date +%s)
deadline=$(( start + BUDGET ))

if [ -z "${PYTHON:-}" ]; then
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import torch' 2>/dev/null; then
      PYTHON=$candidate
      break
    fi
  done
fi
if [ -z "${PYTHON:-}" ]; then
  echo "gpu_vs_torch: no python3 here imports torch (set PYTHON)" >&2
  exit 2
fi

IFS=, read -r -a models <<<"$MODELS"
for model in "${models[@]}"; do
  case "$model" in
    resnet20 | resnet18 | resnet50) ;;
    *) echo "gpu_vs_torch: MODELS: unknown model '$model' (resnet20, resnet18, resnet50)" >&2
       exit 2 ;;
  esac
done
# model -> config, batch, --image-size
config_of() {
  local config
  case "$1" in
    resnet20) config=configs/cifar10_resnet20.toml ;;
    resnet18) config=configs/imagefolder_resnet18.toml ;;
    resnet50) config=configs/imagenet_resnet50.toml ;;
  esac
  if [ -n "${RESOLVED_DIR:-}" ]; then config=$RESOLVED_DIR/$(basename "$config"); fi
  echo "$config"
}
batch_of() { if [ "$1" = resnet20 ]; then echo "$BATCH_32PX"; else echo "$BATCH_224PX"; fi; }
size_of() { if [ "$1" = resnet20 ]; then echo 0; else echo "$IMAGE_SIZE"; fi; }

mkdir -p "$OUT/logs" "$OUT/work"
jsonl=$OUT/gpu_vs_torch.jsonl
: >"$jsonl"
trap 'rm -f "$OUT"/work/synthetic-*.h5 "$OUT"/work/synthetic-*.h5.part' EXIT

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "mode: GPU_VS_TORCH_DEVICE=$DEVICE BUDGET=${BUDGET}s WARMUP=$WARMUP STEPS=$STEPS COMPILE_WARMUP=$COMPILE_WARMUP BATCH_32PX=$BATCH_32PX BATCH_224PX=$BATCH_224PX IMAGE_SIZE=$IMAGE_SIZE CONFLUX_DEVICE=$CONFLUX_DEVICE"
  echo "python: $PYTHON ($("$PYTHON" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'))"
  echo "conflux: $CONFLUX_BIN/conflux-bench trainer-step ($(cat "$CONFLUX_BIN/.flavor" 2>/dev/null || echo 'flavour unknown'); $("$CONFLUX_BIN/conflux" --version 2>&1 | head -1 || true))"
  echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p') ($threads cores)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
  fi
} >"$OUT/env.txt"
cat "$OUT/env.txt"

# Seconds a run may take: its own limit, within what is left of the budget less `reserve`.
limit() {  # own_limit reserve
  local left=$(( deadline - $(date +%s) - $2 ))
  if [ "$left" -lt "$1" ]; then echo $(( left > 5 ? left : 5 )); else echo "$1"; fi
}

# The rows a PyTorch process was to write but did not (it timed out or crashed): one row each
# saying so, with the end of its log.
fill_missing() {  # name batch status why log planned...
  "$PYTHON" - "$jsonl" "$@" <<'PY'
import json, pathlib, sys
jsonl, name, batch, status, why, log, planned = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                                 sys.argv[4], sys.argv[5], sys.argv[6],
                                                 sys.argv[7:])
have = set()
for line in pathlib.Path(jsonl).read_text().splitlines():
    if line.strip():
        r = json.loads(line)
        if r.get("system") == "pytorch" and r["model"] == name and r["batch"] == batch:
            have.add(f"{r['precision']}:{'compile' if r['compile'] else 'eager'}")
lines = pathlib.Path(log).read_text(errors="replace").splitlines()
tail = " | ".join([l for l in lines if l.strip() and not l.startswith("{")][-3:])[-1500:]
with open(jsonl, "a") as f:
    for plan in planned:
        if plan not in have:
            precision, mode = plan.split(":")
            row = {"model": name, "batch": batch, "precision": precision,
                   "compile": mode == "compile", "system": "pytorch", "status": status,
                   "message": f"the PyTorch process ended ({why}) before this row; its last "
                              f"lines: {tail or '(none)'}"}
            f.write(json.dumps(row) + "\n")
            print(f"   {row['status']}: {name} {precision} {mode}")
PY
}

torch_rows() {  # name phase(eager|compile) timeout
  local name=$1 phase=$2 seconds=$3 log code=0 status why planned args
  log=$OUT/logs/$name-pytorch-$phase.log
  if [ "$phase" = eager ]; then
    args=(--precision "bf16,fp32"); planned=(bf16:eager fp32:eager)
  else
    args=(--precision bf16 --compile --compile-only --compile-warmup "$COMPILE_WARMUP")
    planned=(bf16:compile)
  fi
  echo "== $name: PyTorch $phase (${planned[*]}), batch $(batch_of "$name"), timeout ${seconds}s"
  timeout --kill-after=10 "$seconds" "$PYTHON" benchmarks/gpu_vs_torch.py --system pytorch \
    --config "$(config_of "$name")" --name "$name" --batch "$(batch_of "$name")" \
    --image-size "$(size_of "$name")" --warmup "$WARMUP" --steps "$STEPS" --json "$jsonl" \
    --work-dir "$OUT/work" --device "$DEVICE" --threads "$threads" "${args[@]}" >"$log" 2>&1 ||
    code=$?
  "$PYTHON" benchmarks/gpu_vs_torch.py --brief "$log" || true
  status=error why="exit $code"
  if [ "$code" = 124 ] || [ "$code" = 137 ]; then status=timeout why="stopped after ${seconds} s"; fi
  if [ "$code" != 0 ]; then echo "   PyTorch process: $status, $why (see $log)"; fi
  fill_missing "$name" "$(batch_of "$name")" "$status" "$why" "$log" "${planned[@]}"
}

conflux_row() {  # name timeout precision [variant key=value]
  local name=$1 seconds=$2 precision=$3 variant=${4:-} setting=${5:-} log code=0
  local extra=()
  if [ -n "$variant" ]; then extra=(--variant "$variant" --conflux-set "$setting"); fi
  log=$OUT/logs/$name-conflux-$precision${variant:+-$variant}.log
  echo "== $name: conflux-bench trainer-step, train.device = $CONFLUX_DEVICE, $precision${variant:+, $variant ($setting)}, batch $(batch_of "$name"), timeout ${seconds}s"
  # conflux-bench itself stops at `seconds`; the extra 30 s bound the config check.
  timeout --kill-after=10 $(( seconds + 30 )) \
    "$PYTHON" benchmarks/gpu_vs_torch.py --system conflux --config "$(config_of "$name")" \
    --name "$name" --batch "$(batch_of "$name")" --image-size "$(size_of "$name")" \
    --warmup "$WARMUP" --steps "$STEPS" --json "$jsonl" --work-dir "$OUT/work" \
    --device "$DEVICE" --conflux-device "$CONFLUX_DEVICE" --timeout "$seconds" \
    --conflux-precision "$precision" \
    --conflux-set "cluster.blas_threads=$([ "$CONFLUX_DEVICE" = cpu ] && echo "$threads" || echo 1)" \
    "${extra[@]}" >"$log" 2>&1 || code=$?
  if [ "$code" != 0 ]; then
    echo "   conflux row: gpu_vs_torch.py exit $code (see $log)"
    "$PYTHON" - "$jsonl" "$name" "$(batch_of "$name")" "$log" "$CONFLUX_DEVICE" "$precision" \
      "$variant" <<'PY'
import json, sys
jsonl, name, batch, log, device, precision, variant = sys.argv[1:8]
batch = int(batch)
tail = [l for l in open(log, errors="replace").read().splitlines() if l.strip()][-3:]
row = {"model": name, "batch": batch, "precision": precision, "compile": False, "system": "conflux",
       "train_device": device, "status": "error",
       "message": " | ".join(tail)[-1500:] or "(no output)"}
if variant:
    row["variant"] = variant
open(jsonl, "a").write(json.dumps(row) + "\n")
PY
  fi
  "$PYTHON" benchmarks/gpu_vs_torch.py --brief "$log" || true
}

n=${#models[@]}
for model in "${models[@]}"; do  # phase 1; keeps 20 s per conflux run and 40 per compile
  torch_rows "$model" eager "$(limit "$EAGER_TIMEOUT" $(( n * 60 )))"
done
for model in "${models[@]}"; do  # phase 2: conflux in bf16 (against autocast), then fp32
  conflux_row "$model" "$(limit "$CONFLUX_TIMEOUT" $(( n * 40 )))" bf16
done
for model in "${models[@]}"; do
  conflux_row "$model" "$(limit "$CONFLUX_TIMEOUT" $(( n * 40 )))" fp32
done
# What two defaults cost or save, in bf16: CUDA graphs on the launch-bound model (ResNet-20),
# deterministic cuDNN algorithms on the largest one listed.
for model in "${models[@]}"; do
  if [ "$model" = resnet20 ]; then
    conflux_row "$model" "$(limit "$CONFLUX_TIMEOUT" $(( n * 40 )))" bf16 no-graphs \
      train.gpu_graphs=false
  fi
done
last=${models[$(( n - 1 ))]}
conflux_row "$last" "$(limit "$CONFLUX_TIMEOUT" $(( n * 40 )))" bf16 nondeterministic \
  train.gpu_deterministic=false
left=$n
for model in "${models[@]}"; do  # phase 3: each compile gets an equal share of what is left
  share=$(( (deadline - $(date +%s) - 10) / left ))
  torch_rows "$model" compile "$(limit $(( share > 5 ? share : 5 )) 10)"
  left=$(( left - 1 ))
done

echo
"$PYTHON" benchmarks/gpu_vs_torch.py --report "$jsonl" --markdown "$OUT/gpu_vs_torch.md"
echo
echo "done in $(( $(date +%s) - start )) s (budget ${BUDGET} s): $jsonl, $OUT/gpu_vs_torch.md"
