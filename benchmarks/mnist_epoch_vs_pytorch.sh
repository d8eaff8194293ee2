#!/usr/bin/env bash
# Benchmark: one MNIST-MLP training epoch on 2 trainer ranks, conflux against PyTorch CPU
# DistributedDataParallel (2 processes, one thread each, same model, batch and preprocessing),
# both measured in this one script run on the same machine. Each side trains 2 epochs and the
# second (warm) epoch's training time is compared; evaluation is excluded on both sides.
# Target: conflux epoch time <= 0.5 x PyTorch's. Results: bench-results/mnist_epoch.json
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
DATA=$CONFLUX_DATA
OUT=bench-results
mkdir -p "$OUT"
run_dir="$OUT/conflux-mnist-$(date +%Y%m%d-%H%M%S)"

echo "conflux: mpirun -np 2, configs/mnist_mlp.toml, 2 epochs, eval off"
"${MPIRUN[@]}" -np 2 "${CONFLUX_BIN:-build/bin}/conflux" train --config configs/mnist_mlp.toml \
  --set train.epochs=2 --set train.eval=false --set train.log_every=0 \
  --set "run.dir=$run_dir" --set "data.dir=$DATA" >"$OUT/conflux.log" 2>&1
conflux_s=$(sed -n '2p' "$run_dir/metrics.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch_seconds"])')
echo "conflux epoch 2: ${conflux_s} s"

torch_s=""
# Debian's python3-torch belongs to the system interpreter, not to a pyenv/venv one.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if "$PY" -c 'import torch' 2>/dev/null; then
  echo "pytorch: torchrun-style 2 processes (gloo, 1 thread each)"
  pids=()
  for r in 0 1; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 RANK=$r WORLD_SIZE=2 OMP_NUM_THREADS=1 \
      "$PY" benchmarks/pytorch_ddp_mnist.py --data "$DATA" --epochs 2 >"$OUT/pytorch-r$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$OUT/pytorch-r0.log"
  # Debian's torch uses whatever libblas.so.3 points to; the reference BLAS would make it
  # about 3x slower and the comparison unfair.
  if ! head -1 "$OUT/pytorch-r0.log" | grep -q "openblas"; then
    echo "error: PyTorch is not running on OpenBLAS (see the blas field above); fix libblas.so.3" >&2
    echo "       with: update-alternatives --config libblas.so.3-x86_64-linux-gnu" >&2
    exit 3
  fi
  torch_s=$(grep '"epoch": 2' "$OUT/pytorch-r0.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch_seconds"])')
  echo "pytorch epoch 2: ${torch_s} s"
else
  echo "skip: python3-torch is not installed (apt-get install python3-torch); no PyTorch baseline"
fi

python3 - "$conflux_s" "${torch_s:-nan}" "$OUT/mnist_epoch.json" <<'PY'
import json, math, sys
c, t, path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ratio = c / t if not math.isnan(t) else None
result = {"benchmark": "mnist_mlp_epoch_2_trainers", "conflux_epoch_s": c,
          "pytorch_ddp_epoch_s": None if math.isnan(t) else t, "conflux_over_pytorch": ratio,
          "target": "<= 0.5", "met": None if ratio is None else ratio <= 0.5}
json.dump(result, open(path, "w"), indent=1)
print(f"{'':24}{'epoch s':>10}\n{'conflux (2 ranks)':24}{c:10.2f}")
if ratio is not None:
    print(f"{'pytorch DDP (2 procs)':24}{t:10.2f}\nratio conflux/pytorch = {ratio:.3f} (target <= 0.5): {'met' if ratio <= 0.5 else 'NOT met'}")
PY
