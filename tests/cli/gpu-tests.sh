#!/usr/bin/env bash
# train.device from the command line. Without a usable GPU (no device, no driver, or a CPU-only
# build): "auto" trains on the CPU, says so once ("no usable GPU (<reason>): trainers compute on
# the CPU") and gives the digest of train.device = "cpu" bit for bit; "gpu" is an input error
# (exit 2) on every rank naming train.device and the probe's reason. With a GPU: "auto" puts
# every trainer on a GPU, and a GPU run resumed from a mid-epoch checkpoint ends with the
# uninterrupted run's digest; skipped with "no GPU: <reason>" otherwise. Every layer type, AdamW,
# label smoothing and clipping pass the kernel check; on a GPU a residual graph trains to the
# same digest from any offload ratio. About 12 s on 2 cores without a GPU.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
if [ ! -d "$DATA/mnist" ]; then
  ok "gpu tests (skipped: $DATA/mnist not found)"
  cli_summary
  exit
fi
# 2 trainers + 1 worker unless told otherwise.
mnist_train() { "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config configs/mnist_mlp.toml \
  --set "run.dir=$TMP/run-$2" "${QUICK[@]}" "${@:3}"; }

mnist_train 3 auto >"$TMP/auto.log" 2>&1
auto_rc=$?
reason=$(sed -n 's/.*no usable GPU (\(.*\)): trainers compute on the CPU$/\1/p' "$TMP/auto.log" | head -1)

if [ -n "$reason" ]; then
  # --- no usable GPU: auto is the CPU, said once; gpu is an input error --------------------------
  mnist_train 3 cpu --set 'train.device="cpu"' >"$TMP/cpu.log" 2>&1
  da=$(digest_of "$TMP/auto.log")
  dc=$(digest_of "$TMP/cpu.log")
  if [ "$auto_rc" -eq 0 ] && [ -n "$da" ] && [ "$da" = "$dc" ] &&
    [ "$(grep -c "no usable GPU" "$TMP/auto.log")" -eq 1 ] && ! grep -q "no usable GPU" "$TMP/cpu.log"; then
    ok "train.device = auto without a GPU: the CPU, said once ($reason), digest of device = cpu"
  else
    not_ok "auto without a GPU: exit $auto_rc, digest '$da' (cpu '$dc')" "$(cat "$TMP/auto.log")"
  fi
  expect_fail 'train.device = "gpu" without a GPU: exit 2 on every rank, naming the key' 2 \
    'train.device = "gpu" but no usable GPU' 3 -- mnist_train 3 gpu --set 'train.device="gpu"'
  expect_fail 'train.device = "gpu" without a GPU: the message gives the reason' 2 \
    "$reason" 3 -- mnist_train 3 gpu2 --set train.device=gpu
  ok "GPU training (skipped: no GPU: $reason)"
else
  # --- a GPU: auto uses it; checkpoint resume on the GPU is bit-identical ------------------------
  if [ "$auto_rc" -eq 0 ] && [ "$(grep -c "computing on GPU" "$TMP/auto.log")" -eq 2 ] &&
    [ -n "$(digest_of "$TMP/auto.log")" ]; then
    ok "train.device = auto with a GPU: both trainers compute on a GPU"
  else
    not_ok "auto with a GPU: exit $auto_rc" "$(cat "$TMP/auto.log")"
  fi
  GPU1=(--set 'train.device="gpu"' --set cluster.trainers=1 --set train.epochs=2
    --set checkpoint.every_steps=4 --set checkpoint.keep=10)
  mnist_train 2 gpu "${GPU1[@]}" >"$TMP/gpu.log" 2>&1
  mnist_train 2 gpu-resume "${GPU1[@]}" --resume "$TMP/run-gpu/checkpoints/ckpt-000000004.h5" \
    >"$TMP/gpu-resume.log" 2>&1
  dg=$(digest_of "$TMP/gpu.log")
  dr=$(digest_of "$TMP/gpu-resume.log")
  if [ -n "$dg" ] && [ "$dg" = "$dr" ] && grep -q "resuming from .*ckpt-000000004.h5" "$TMP/gpu-resume.log"; then
    ok "1 GPU trainer + 1 worker: resumed from step 4, the uninterrupted digest ($dg)"
  else
    not_ok "GPU resume: digest '$dr' (uninterrupted '$dg')" "$(cat "$TMP/gpu.log" "$TMP/gpu-resume.log")"
  fi
fi

# --- every layer type, Adam, smoothing and clipping on the GPU -----------------------------------
# A residual graph with batch norm, a padded max pool, add, dropout and global average pooling,
# trained with AdamW, label smoothing and clipping. Without a GPU, "gpu" passes the kernel check
# and stops at the probe (exit 2, "no usable GPU"); with one, it trains, and the digest does not
# depend on the offload ratio (batches from the worker or the trainer's own threads).
cat >"$TMP/res.toml" <<'EOF'
[data]
dataset = "mnist"
[[model.layers]]
type = "conv2d"
out = 8
padding = 1
name = "stem"
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "relu"
name = "act"
[[model.layers]]
type = "maxpool"
kernel = 3
stride = 2
padding = 1
name = "pool"
[[model.layers]]
type = "conv2d"
out = 8
padding = 1
[[model.layers]]
type = "batchnorm"
name = "bn2"
[[model.layers]]
type = "add"
inputs = ["bn2", "pool"]
[[model.layers]]
type = "relu"
[[model.layers]]
type = "globalavgpool"
[[model.layers]]
type = "dropout"
rate = 0.2
[[model.layers]]
type = "linear"
out = 10
[train]
optimizer = "adamw"
lr = 1e-3
label_smoothing = 0.1
clip_grad_norm = 1.0
EOF
res_train() { res_train_np 2 "$@"; }
res_train_np() { "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config "$TMP/res.toml" --set cluster.trainers=1 \
  --set 'train.device="gpu"' --set "run.dir=$TMP/run-$2" "${QUICK[@]}" "${@:3}"; }
if [ -n "$reason" ]; then
  expect_fail 'a ResNet-style graph with AdamW on "gpu" without a GPU: past the kernel check, at the probe' 2 \
    'train.device = "gpu" but no usable GPU' 2 -- res_train res-nogpu
else
  # MNIST's light transform makes 8-bit images: batches reach the GPU as bytes (local and worker
  # ones alike) and are normalised there; 1 trainer with 1 or 2 workers and any ratio.
  res_train res0 --set data.offload_ratio=0 >"$TMP/res0.log" 2>&1
  res_train res1 --set data.offload_ratio=1 >"$TMP/res1.log" 2>&1
  res_train_np 3 res05 --set data.offload_ratio=0.5 >"$TMP/res05.log" 2>&1
  d0=$(digest_of "$TMP/res0.log")
  d1=$(digest_of "$TMP/res1.log")
  d05=$(digest_of "$TMP/res05.log")
  if [ -n "$d0" ] && [ "$d0" = "$d1" ] && [ "$d0" = "$d05" ] && grep -q "computing on GPU" "$TMP/res0.log"; then
    ok "residual graph, AdamW, smoothing, clipping on the GPU (8-bit batches): offload ratios 0, 1 and 0.5 with 2 workers give one digest ($d0)"
  else
    not_ok "residual graph on the GPU: digests '$d0' (ratio 0), '$d1' (ratio 1), '$d05' (ratio 0.5, 2 workers)" \
      "$(cat "$TMP/res0.log" "$TMP/res1.log" "$TMP/res05.log")"
  fi
  # A rotation makes the transform's output floats: batches reach the GPU as floats.
  res_train rot0 --set data.offload_ratio=0 --set transform.rotation_degrees=10 >"$TMP/rot0.log" 2>&1
  res_train rot1 --set data.offload_ratio=1 --set transform.rotation_degrees=10 >"$TMP/rot1.log" 2>&1
  r0=$(digest_of "$TMP/rot0.log")
  r1=$(digest_of "$TMP/rot1.log")
  if [ -n "$r0" ] && [ "$r0" = "$r1" ] && [ "$r0" != "$d0" ]; then
    ok "the same graph from float batches (a rotation): offload ratio 0 and 1 give one digest ($r0)"
  else
    not_ok "float batches on the GPU: digests '$r0' (ratio 0), '$r1' (ratio 1)" \
      "$(cat "$TMP/rot0.log" "$TMP/rot1.log")"
  fi
  # Steps replayed as CUDA graphs (the default) give the bits of steps run kernel by kernel.
  res_train eager --set data.offload_ratio=0 --set train.gpu_graphs=false >"$TMP/eager.log" 2>&1
  de=$(digest_of "$TMP/eager.log")
  if [ -n "$d0" ] && [ "$de" = "$d0" ] && grep -q "CUDA graphs: [1-9][0-9]* captured, [1-9]" "$TMP/res0.log" &&
    grep -q "kernel by kernel (train.gpu_graphs = false)" "$TMP/eager.log"; then
    ok "CUDA graphs: steps replayed as graphs give the digest of train.gpu_graphs = false ($de); $(grep -o 'CUDA graphs: .*' "$TMP/res0.log")"
  else
    not_ok "CUDA graphs: digest '$d0' with graphs, '$de' without" \
      "$(grep -h 'CUDA graphs\|kernel by kernel\|error' "$TMP/res0.log" "$TMP/eager.log")"
  fi
fi

cli_summary
