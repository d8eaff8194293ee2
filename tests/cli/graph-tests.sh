#!/usr/bin/env bash
# Graph models from the command line (docs/models.md): a small residual network with blocks,
# batch norm, dropout, add and concat trains to the same digest twice, with workers building
# every batch, and resumed from a checkpoint; 1 trainer x 64 and 2 trainers x 32 agree within
# float tolerance (synchronised batch norm); it exports to ONNX; the shipped ResNet-20 config
# builds; bad graphs exit 2 naming the layer and its file:line.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
if [ ! -d "$DATA/cifar-10" ]; then
  ok "graph tests (skipped: no CIFAR-10 under $DATA)"
  cli_summary
  exit
fi
PY=/usr/bin/python3  # Debian's interpreter: h5py, numpy and onnx live there

cat >"$TMP/res.toml" <<'TOML'
[run]
name = "graph"
seed = 11
[cluster]
trainers = 1
[data]
dataset = "cifar10"
train_limit = 512
test_limit = 64
[transform]
pad = 4
crop = 32
hflip = true
mean = [0.49, 0.48, 0.45]
std = [0.25, 0.24, 0.26]
[train]
epochs = 1
batch_size = 64
lr = 0.05
momentum = 0.9
log_every = 0

[[model.blocks.basic]]
type = "conv2d"
out = "$channels"
padding = 1
[[model.blocks.basic]]
type = "batchnorm"
name = "bn"
[[model.blocks.basic]]
type = "add"
inputs = ["bn", "input"]
[[model.blocks.basic]]
type = "relu"

[[model.layers]]
type = "conv2d"
out = 8
kernel = 3
stride = 2
padding = 1
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "relu"
name = "stem"
[[model.layers]]
type = "block"
block = "basic"
repeat = 2
channels = 8
name = "stage"
[[model.layers]]
type = "concat"
inputs = ["stage", "stem"]
[[model.layers]]
type = "maxpool"
kernel = 2
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "dropout"
rate = 0.2
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "linear"
out = 10
TOML

run() {  # run RANKS NAME [--set ...]...: a run in $TMP/NAME, its log in $TMP/NAME.log
  "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config "$TMP/res.toml" --set "run.dir=$TMP/$2" \
    "${@:3}" >"$TMP/$2.log" 2>&1
}

# --- determinism: twice, with workers building every batch, resumed -----------------------------
run 1 a --set checkpoint.every_steps=4
ref=$(digest_of "$TMP/a.log")
run 1 b
if [ -n "$ref" ] && [ "$(digest_of "$TMP/b.log")" = "$ref" ] &&
  grep -q "add" "$TMP/a.log" &&
  grep -q "conv2d layers compute with oneDNN's direct convolutions" "$TMP/a.log"; then
  ok "residual graph with batch norm and dropout, oneDNN's convolutions (the default): the same digest twice ($ref)"
else
  not_ok "graph run twice (want $ref)" "$(cat "$TMP/a.log" "$TMP/b.log")"
fi
run 3 w --set data.offload_ratio=1 --set data.audit=true
if [ "$(digest_of "$TMP/w.log")" = "$ref" ] && grep -q "audit: all 512 samples used exactly once" "$TMP/w.log"; then
  ok "2 workers build every batch (offload ratio 1): the same digest, audit passes"
else
  not_ok "graph with workers (want $ref)" "$(cat "$TMP/w.log")"
fi
run 1 r --resume "$TMP/a/checkpoints/ckpt-000000004.h5"
if grep -q "resuming from" "$TMP/r.log" && [ "$(digest_of "$TMP/r.log")" = "$ref" ]; then
  ok "resumed from the step-4 checkpoint (running statistics in it): the same digest"
else
  not_ok "graph resume (want $ref)" "$(cat "$TMP/r.log")"
fi

run 1 i --set train.conv_kernels=im2col
if grep -q "conv2d layers compute with im2col + OpenBLAS SGEMM" "$TMP/i.log" &&
  [ -n "$(digest_of "$TMP/i.log")" ] && [ "$(digest_of "$TMP/i.log")" != "$ref" ]; then
  ok "train.conv_kernels = im2col: im2col's convolutions, another digest (another summation order)"
else
  not_ok "im2col run (want a digest other than $ref)" "$(cat "$TMP/i.log")"
fi

# --- synchronised batch norm: the split of the global batch does not matter --------------------
run 2 t2 --set cluster.trainers=2
if "$PY" -c 'import h5py, numpy' 2>/dev/null; then
  diff=$("$PY" - "$TMP/a/model.h5" "$TMP/t2/model.h5" <<'PYEOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
worst = max(float(np.max(np.abs(a["params"][k][()] - b["params"][k][()]))) for k in a["params"])
print(f"{worst:.3g}")
PYEOF
)
  if [ -n "$diff" ] && "$PY" -c "import sys; sys.exit(0 if $diff < 1e-3 else 1)"; then
    ok "1 trainer x 64 and 2 trainers x 32: every weight and running statistic within $diff"
  else
    not_ok "batch norm across trainers: max |difference| '$diff'" "$(cat "$TMP/t2.log")"
  fi
else
  ok "1 x 64 vs 2 x 32 (skipped: $PY lacks h5py or numpy)"
fi

# --- ONNX export of the graph ---------------------------------------------------------------------
if "$PY" -c 'import onnx, numpy' 2>/dev/null; then
  out=$("$CONFLUX" export --model "$TMP/a/model.h5" --config "$TMP/a/config.toml" \
    --output "$TMP/onnx/model.onnx" --test-samples 16 2>&1 &&
    "$PY" tests/cli/onnx_check.py "$TMP/onnx/model.onnx" 2>&1)
  if [ $? -eq 0 ] && grep -q "BatchNormalization" <<<"$out" && grep -q "Sum" <<<"$out" &&
    grep -q "Concat" <<<"$out" && grep -q "same class 16/16" <<<"$out"; then
    ok "ONNX export of the graph: checker ok, numpy evaluation equals conflux's logits"
  else
    not_ok "ONNX export of the graph" "$out"
  fi
else
  ok "ONNX export of the graph (skipped: $PY lacks onnx or numpy)"
fi

# --- the shipped ResNet-20 ------------------------------------------------------------------------
out=$("$CONFLUX" config check --config configs/cifar10_resnet20.toml 2>&1)
if [ $? -eq 0 ]; then
  ok "configs/cifar10_resnet20.toml is valid"
else
  not_ok "resnet20 config check" "$out"
fi

# --- bad graphs: exit 2 naming the layer and its place ---------------------------------------------
bad() {  # bad NAME FROM TO: res.toml with FROM replaced by TO, as $TMP/NAME.toml
  "$PY" -c 'import sys; t = open(sys.argv[1]).read(); assert sys.argv[2] in t; open(sys.argv[4], "w").write(t.replace(sys.argv[2], sys.argv[3], 1))' \
    "$TMP/res.toml" "$2" "$3" "$TMP/$1.toml"
}
bad cycle 'name = "stem"' $'name = "stem"\ninputs = ["stage"]'
expect_fail "a cycle: exit 2 naming it" 2 "form a cycle: layer" -- \
  "$CONFLUX" config check --config "$TMP/cycle.toml"
bad unknown 'inputs = ["stage", "stem"]' 'inputs = ["stage", "stme"]'
expect_fail "an input no layer has: exit 2 with file:line and a suggestion" 2 \
  "unknown.toml:53:1): input 'stme' is not the name of any layer; did you mean 'stem'" -- \
  "$CONFLUX" config check --config "$TMP/unknown.toml"
bad mismatch 'channels = 8' 'channels = 16'
expect_fail "add of different shapes: exit 2 naming the block layer and the instance" 2 \
  "mismatch.toml:30:1 (block instance model.layers[3] at $TMP/mismatch.toml:47:1)) adds inputs of different shapes: [16,16,16], [8,16,16]" -- \
  "$CONFLUX" config check --config "$TMP/mismatch.toml"
expect_fail "init_from a model of another architecture: exit 2" 2 "model file $TMP/a/model.h5" -- \
  "${MPIRUN[@]}" -np 1 "$CONFLUX" train --config configs/cifar10_cnn.toml --set cluster.trainers=1 \
  --set data.train_limit=64 --set data.test_limit=64 --set "train.init_from=$TMP/a/model.h5" \
  --set "run.dir=$TMP/init"

cli_summary
