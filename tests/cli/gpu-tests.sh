#!/usr/bin/env bash
# train.device from the command line. Without a usable GPU (no device, no driver, or a CPU-only
# build): "auto" trains on the CPU, says so once ("no usable GPU (<reason>): trainers compute on
# the CPU") and gives the digest of train.device = "cpu" bit for bit; "gpu" is an input error
# (exit 2) on every rank naming train.device and the probe's reason. With a GPU: "auto" puts
# every trainer on a GPU, and a GPU run resumed from a mid-epoch checkpoint ends with the
# uninterrupted run's digest; skipped with "no GPU: <reason>" otherwise. About 10 s on 2 cores
# without a GPU.
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

# --- a layer without GPU kernels: "gpu" is refused naming it, "auto" computes on the CPU -------
cat >"$TMP/gap.toml" <<'EOF'
[data]
dataset = "mnist"
[[model.layers]]
type = "conv2d"
out = 4
[[model.layers]]
type = "relu"
[[model.layers]]
type = "globalavgpool"
[[model.layers]]
type = "linear"
out = 10
EOF
gap_train() { "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config "$TMP/gap.toml" --set cluster.trainers=2 \
  --set "run.dir=$TMP/run-$1" "${QUICK[@]}" "${@:2}"; }
expect_fail 'train.device = "gpu" with a globalavgpool layer: exit 2 on every rank, naming the layer' 2 \
  'model.layers[2] (type = "globalavgpool") has no GPU kernel' 3 -- gap_train gap-gpu --set train.device=gpu
out=$(gap_train gap-auto --set train.device=auto 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c 'model.layers\[2\] (type = "globalavgpool") has no GPU kernel: trainers compute on the CPU' <<<"$out")" -eq 1 ]; then
  ok 'train.device = "auto" with a globalavgpool layer: the CPU, said once'
else
  not_ok "auto with globalavgpool: exit $rc" "$out"
fi

cli_summary
