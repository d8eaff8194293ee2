#!/usr/bin/env bash
# Command-line tests of `conflux-bench trainer-step` (the conflux rows of
# benchmarks/gpu_vs_torch.sh) on the CPU: ResNet-20 at batch 4 reports a positive rate, a finite
# loss, the batch and the CPU in its JSON; the synthetic batches are the same on every run of a
# seed (same loss) and differ with run.seed; the loss falls as the steps train; the batch
# defaults to train.batch_size; bad options, a GPU that is not there and two ranks exit 2
# naming the problem.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
CPU=(--set 'train.device="cpu"' --set cluster.blas_threads=1)

if [ ! -d "$DATA/cifar-10" ] || [ ! -d "$DATA/mnist" ]; then
  ok "trainer-step (skipped: CIFAR-10 or MNIST not found under $DATA)"
  cli_summary
  exit
fi

# field FILE KEY: the summary value KEY of a --json file (Python's repr; "missing" if absent).
field() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary"].get(sys.argv[2], "missing"))' "$1" "$2"
}

# step NAME ARGS...: one run into $TMP/NAME.json, its output in $TMP/NAME.log; returns its exit code.
step() {
  local name=$1
  shift
  "$BENCH" trainer-step "${CPU[@]}" --json "$TMP/$name.json" "$@" >"$TMP/$name.log" 2>&1
}

# --- ResNet-20 at batch 4: the JSON's figures --------------------------------------------------
if step r20 --config configs/cifar10_resnet20.toml --batch 4 --warmup 1 --steps 2 &&
  python3 - "$TMP/r20.json" <<'PY'; then
import json, math, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
assert r["scenario"] == "trainer-step", r["scenario"]
assert s["device"] == "CPU" and s["device_kind"] == "cpu", s["device"]
assert s["batch"] == 4 and s["steps"] == 2 and s["warmup"] == 1, s
assert s["image"] == "3x32x32" and s["classes"] == 10 and s["params"] == 273258, s
assert s["precision"] == "fp32" and s["input"].startswith("floats"), s
assert s["samples_per_s"] > 0 and s["step_ms"] > 0 and s["measured_s"] > 0, s
# samples/s and the mean step are the same measurement: batch x steps over the wall clock.
assert math.isclose(s["samples_per_s"], 4 * 2 / s["measured_s"], rel_tol=1e-9), s
assert math.isclose(s["step_ms"], 1e3 * s["measured_s"] / 2, rel_tol=1e-9), s
assert math.isclose(s["window_end_monotonic_s"] - s["window_start_monotonic_s"], s["measured_s"],
                    rel_tol=1e-6), s
# Random labels over 10 classes: a fresh model's cross-entropy is near ln 10.
assert s["loss_finite"] is True and 1.0 < s["loss"] < 5.0, s["loss"]
assert s["peak_device_bytes"] == 0, s  # no DeviceBuffer on the CPU
PY
  ok "ResNet-20, batch 4, 1 warm-up + 2 steps on the CPU: $(field "$TMP/r20.json" samples_per_s) samples/s, loss $(field "$TMP/r20.json" loss), the JSON's fields"
else
  not_ok "ResNet-20 trainer-step on the CPU" "$(cat "$TMP/r20.log" "$TMP/r20.json" 2>/dev/null)"
fi

# --- the synthetic batches: deterministic per run.seed; the loss is the trainer's ------------
step again --config configs/cifar10_resnet20.toml --batch 4 --warmup 1 --steps 2
step seed --config configs/cifar10_resnet20.toml --batch 4 --warmup 1 --steps 2 --set run.seed=7
a=$(field "$TMP/r20.json" loss) b=$(field "$TMP/again.json" loss) c=$(field "$TMP/seed.json" loss)
if [ "$a" = "$b" ] && [ "$a" != "$c" ] && [ "$c" != missing ]; then
  ok "the same loss on a second run ($a), another with run.seed = 7 ($c)"
else
  not_ok "loss across runs: $a, again $b, run.seed 7 $c" "$(cat "$TMP/again.log" "$TMP/seed.log")"
fi
# The steps apply their gradients: the MLP learns its two synthetic batches by heart.
step early --config configs/mnist_mlp.toml --batch 8 --warmup 1 --steps 2
step late --config configs/mnist_mlp.toml --batch 8 --warmup 20 --steps 2
early=$(field "$TMP/early.json" loss) late=$(field "$TMP/late.json" loss)
if python3 -c 'import sys; e, l = map(float, sys.argv[1:]); sys.exit(not (l < 0.1 * e))' "$early" "$late" 2>/dev/null; then
  ok "the loss falls as the steps train (MLP on 2 batches of 8: $early after 1 step, $late after 20)"
else
  not_ok "loss after 1 step $early, after 20 $late (want < a tenth)" "$(cat "$TMP/early.log" "$TMP/late.log")"
fi
want=$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' configs/mnist_mlp.toml)
if step mlp --config configs/mnist_mlp.toml --warmup 1 --steps 1 &&
  [ "$(field "$TMP/mlp.json" batch)" = "$want" ] && [ "$(field "$TMP/mlp.json" image)" = 1x28x28 ]; then
  ok "without --batch: train.batch_size of the config ($want)"
else
  not_ok "default batch: $(field "$TMP/mlp.json" batch), want $want" "$(cat "$TMP/mlp.log")"
fi

# --- bad input: exit 2 naming the problem ------------------------------------------------------
expect_fail "--batch 0" 2 "trainer-step: --batch must be at least 1, not 0" -- \
  "$BENCH" trainer-step "${CPU[@]}" --config configs/mnist_mlp.toml --batch 0
expect_fail "--steps 0" 2 "--warmup and --steps must be at least 1, not 5 and 0" -- \
  "$BENCH" trainer-step "${CPU[@]}" --config configs/mnist_mlp.toml --steps 0
expect_fail "a key the config schema lacks" 2 "train.no_such_key" -- \
  "$BENCH" trainer-step --config configs/mnist_mlp.toml --set train.no_such_key=1
expect_fail "2 ranks" 2 "trainer-step runs on 1 rank, not 2" 1 -- \
  "${MPIRUN[@]}" -np 2 "$BENCH" trainer-step "${CPU[@]}" --config configs/mnist_mlp.toml
if ! command -v nvidia-smi >/dev/null; then
  expect_fail 'train.device = "gpu" without a GPU' 2 'train.device = "gpu" but no usable GPU' -- \
    "$BENCH" trainer-step --config configs/mnist_mlp.toml --set 'train.device="gpu"'
fi

cli_summary
