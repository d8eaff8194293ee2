#!/usr/bin/env bash
# Benchmark: ResNet-20 on CIFAR-10 (configs/cifar10_resnet20.toml), conflux against PyTorch on
# the same machine, one script. Both train EPOCHS epochs of the same recipe: SGD momentum 0.9,
# weight decay 1e-4, batch 128, lr 0.1 annealed by cosine to 0 over the run's steps (stepped
# every step), pad 4 + random crop 32 + flip, the config's normalisation, the same seed.
#   conflux: `conflux train` on TRAINERS trainer ranks (mpirun when more than one), the
#            config's multistep schedule replaced with --set train.lr_schedule=cosine.
#   pytorch: benchmarks/pytorch_cifar10_train.py: the model built from the conflux run's
#            resolved config.toml (tools/conflux_to_torch.py), one process on
#            cluster.trainers x cluster.blas_threads threads (conflux's compute threads).
#            One process, not DDP as in benchmarks/mnist_epoch_vs_pytorch.sh: conflux's batch
#            norm uses the global batch's statistics (docs/models.md), and PyTorch's
#            SyncBatchNorm needs GPUs.
# Per epoch: training seconds (evaluation excluded on both sides) and test accuracy, printed
# side by side and written to OUT/results.csv and OUT/results.md (plus both sides' logs).
# DEVICE=gpu trains both on the GPU: conflux with train.device = "gpu" and train.precision =
# PRECISION (fp32 or bf16), PyTorch on cuda with channels_last and the same precision (fp32:
# TF32 off; bf16: torch.autocast) - the convergence check of docs/gpu-benchmark.md.
# Usage: [EPOCHS=2] [TRAIN_LIMIT=0] [TEST_LIMIT=0] [TRAINERS=1] [DEVICE=cpu|gpu]
#        [PRECISION=fp32|bf16] [OUT=DIR] benchmarks/resnet20_vs_torch.sh
#        (LIMIT 0 = the whole split: 50000 / 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
EPOCHS=${EPOCHS:-2}
TRAIN_LIMIT=${TRAIN_LIMIT:-0}
TEST_LIMIT=${TEST_LIMIT:-0}
TRAINERS=${TRAINERS:-1}
DEVICE=${DEVICE:-cpu}
PRECISION=${PRECISION:-fp32}
case "$DEVICE:$PRECISION" in
  cpu:fp32 | gpu:fp32 | gpu:bf16) ;;
  *) echo "resnet20_vs_torch: DEVICE must be cpu or gpu and PRECISION fp32 (or bf16 on a gpu)" >&2; exit 2 ;;
esac
torch_device=cpu
[ "$DEVICE" = gpu ] && torch_device=cuda
OUT=${OUT:-bench-results/resnet20_vs_torch-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# Debian's python3-torch belongs to the system interpreter, not to a pyenv/venv one.
# The GPU hosts' PyTorch is the python3 on PATH (a venv): PYTHON names another.
PY=${PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import torch' 2>/dev/null && command -v python3 >/dev/null &&
  python3 -c 'import torch' 2>/dev/null; then
  PY=python3
fi

conflux=("${CONFLUX_BIN:-build/bin}/conflux")
[ "$TRAINERS" -gt 1 ] && conflux=("${MPIRUN[@]}" -np "$TRAINERS" "${conflux[@]}")
echo "conflux: ResNet-20, $EPOCHS epoch(s), train_limit $TRAIN_LIMIT, $TRAINERS trainer(s) -> $OUT/conflux"
start=$(date +%s.%N)
"${conflux[@]}" train --config configs/cifar10_resnet20.toml --set "cluster.trainers=$TRAINERS" \
  --set "train.epochs=$EPOCHS" --set train.lr_schedule=cosine --set 'train.lr_milestones=[]' \
  --set "data.train_limit=$TRAIN_LIMIT" --set "data.test_limit=$TEST_LIMIT" \
  --set "train.device=\"$DEVICE\"" --set "train.precision=\"$PRECISION\"" \
  --set train.log_every=0 --set "run.dir=$OUT/conflux" --set "data.dir=$CONFLUX_DATA" \
  >"$OUT/conflux.log" 2>&1 || { tail -20 "$OUT/conflux.log" >&2; exit 3; }
echo "conflux: done in $(since "$start") s (wall, with start-up and evaluation)"

if "$PY" -c 'import torch, h5py, numpy' 2>/dev/null; then
  threads=$("$PY" -c 'import sys, tomllib
c = tomllib.load(open(sys.argv[1], "rb"))["cluster"]
print(c["trainers"] * c["blas_threads"])' "$OUT/conflux/config.toml")
  echo "pytorch: the same model and recipe from $OUT/conflux/config.toml, $threads thread(s)"
  start=$(date +%s.%N)
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads \
    "$PY" benchmarks/pytorch_cifar10_train.py --config "$OUT/conflux/config.toml" \
    --data "$CONFLUX_DATA" --threads "$threads" --device "$torch_device" --precision "$PRECISION" \
    --json "$OUT/pytorch.jsonl" >"$OUT/pytorch.log" 2>&1 ||
    { tail -20 "$OUT/pytorch.log" >&2; exit 3; }
  echo "pytorch: done in $(since "$start") s (wall, with start-up and evaluation)"
else
  echo "skip: python3-torch / python3-h5py are not installed for $PY; no PyTorch baseline"
fi

"$PY" - "$OUT" <<'PY'
import json, os, pathlib, subprocess, sys
out = pathlib.Path(sys.argv[1])
conflux = [json.loads(l) for l in (out / "conflux/metrics.jsonl").read_text().splitlines()]
torch_file = out / "pytorch.jsonl"
lines = [json.loads(l) for l in torch_file.read_text().splitlines()] if torch_file.exists() else []
info, pytorch = (lines[0], lines[1:]) if lines else ({}, [])
cpu = subprocess.run("lscpu | sed -n 's/^Model name: *//p'", shell=True, capture_output=True,
                     text=True).stdout.strip()
header = ["epoch", "conflux_s", "pytorch_s", "conflux_over_pytorch", "conflux_test_acc_pct",
          "pytorch_test_acc_pct"]
rows = []
for i, c in enumerate(conflux):
    t = pytorch[i] if i < len(pytorch) else None
    rows.append([c["epoch"], f"{c['epoch_seconds']:.2f}",
                 f"{t['epoch_seconds']:.2f}" if t else "",
                 f"{c['epoch_seconds'] / t['epoch_seconds']:.2f}" if t else "",
                 f"{100 * c['test_accuracy']:.2f}", f"{100 * t['test_accuracy']:.2f}" if t else ""])
(out / "results.csv").write_text("\n".join(",".join(map(str, r)) for r in [header] + rows) + "\n")
md = [f"ResNet-20 on CIFAR-10: {conflux[0]['samples']} training samples per epoch, "
      f"{pytorch[0]['test_samples'] if pytorch else 'the'} test samples; PyTorch "
      f"{info.get('torch', '-')} on {info.get('threads', '-')} thread(s); CPU: {cpu}", "",
      "| epoch | conflux s | PyTorch s | conflux / PyTorch | conflux test acc % | PyTorch test acc % |",
      "|---:|---:|---:|---:|---:|---:|"]
md += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
(out / "results.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
print(f"\nwritten: {out / 'results.csv'}, {out / 'results.md'}")
PY
