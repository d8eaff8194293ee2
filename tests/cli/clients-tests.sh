#!/usr/bin/env bash
# conflux's files read by the real clients, from the pinned virtual environment that
# `make test-deps` makes (tests/cli/clients-venv.sh, tests/requirements-clients.txt):
#   - TensorBoard's own event reader sees exactly the scalars of steps.jsonl and metrics.jsonl
#     (tests/cli/tensorboard_check.py); watch-tests.sh's hand-written decoder stays the second,
#     independent reader;
#   - ONNX Runtime runs `conflux export`'s MLP and residual CNN with batch norm on real test
#     images: the logits of conflux's forward pass, and `conflux eval`'s loss and accuracy on the
#     dataset's own labels (tests/cli/ort_check.py);
#   - h5py reads a checkpoint, model.h5, a `conflux data convert` file and a `conflux data pack`
#     as docs/checkpoints.md and docs/datasets.md describe them, with the values conflux reports
#     (tests/cli/h5_check.py);
#   - each check fails on a damaged copy of its file (a flipped byte, a cut end).
# Without the environment (no PyPI when test-deps ran) every check is a counted skip.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
VENV=${CONFLUX_CLIENTS_VENV:-build/venv}
PY=$VENV/bin/python
skipped=0
skip() { skipped=$((skipped + 1)); echo "skip - $1"; }
summary() {  # cli_summary with the skips, which tests/run-all.sh counts and lists
  echo "cli: $pass passed, $fail failed, $skipped skipped"
  [ "$fail" -eq 0 ]
}
if ! "$PY" -c 'import tensorboard, onnxruntime, onnx, h5py, numpy' 2>/dev/null; then
  why="no $VENV with tensorboard, onnxruntime and h5py (make test-deps makes it; it needs PyPI)"
  skip "TensorBoard's reader on conflux's event files ($why)"
  skip "ONNX Runtime on conflux export's models ($why)"
  skip "h5py on checkpoints, model.h5, converted and packed datasets ($why)"
  summary
  exit
fi
echo "clients: $("$PY" -c 'import tensorboard, onnxruntime, h5py, numpy
print(f"tensorboard {tensorboard.__version__}, onnxruntime {onnxruntime.__version__}, "
      f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), numpy {numpy.__version__}")')"

# damage FILE COPY [cut]: COPY = FILE with the byte in its middle flipped, or with its last 20
# bytes cut off.
damage() {
  cp "$1" "$2"
  local size
  size=$(stat -c %s "$2")
  if [ "${3:-}" = cut ]; then
    truncate -s $((size - 20)) "$2"
  else
    "$PY" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$2" $((size / 2))
  fi
}

# expect_rejected NAME WANT_EXIT TEXT -- COMMAND...: the check fails as it should on damage.
expect_rejected() {
  local name=$1 want=$2 text=$3 out rc
  shift 4
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$want" ] && grep -qF -- "$text" <<<"$out"; then
    ok "$name: exit $rc, $(grep -F -- "$text" <<<"$out" | head -1 | cut -c1-150)"
  else
    not_ok "$name: exit $rc (want $want) without '$text'" "$out"
  fi
}

# --- one MNIST run: TensorBoard, checkpoints, model.h5, the MLP export ----------------------
if [ -d "$DATA/mnist" ]; then
  run=$TMP/mlp
  "$CONFLUX" train --config configs/mnist_mlp.toml --set cluster.trainers=1 --set train.epochs=2 \
    --set data.train_limit=2000 --set data.test_limit=200 --set train.log_every=5 \
    --set checkpoint.every_steps=20 --set "run.dir=$run" >"$TMP/mlp.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || not_ok "MNIST training run: exit $rc" "$(cat "$TMP/mlp.log")"

  # TensorBoard.
  out=$("$PY" tests/cli/tensorboard_check.py "$run" 2>&1)
  trc=$?
  if [ "$rc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -q "all equal" <<<"$out"; then
    ok "$out"
  else
    not_ok "TensorBoard's reader against steps.jsonl / metrics.jsonl" "$out"
  fi
  events=$(find "$run/tensorboard" -name 'events.out.tfevents.*' | head -1)
  mkdir -p "$TMP/tb-flipped" "$TMP/tb-cut"
  damage "$events" "$TMP/tb-flipped/$(basename "$events")"
  damage "$events" "$TMP/tb-cut/$(basename "$events")" cut
  expect_rejected "TensorBoard on an event file with a flipped byte (its CRC stops the reader)" 1 \
    "TensorBoard sees" -- "$PY" tests/cli/tensorboard_check.py "$run" --events "$TMP/tb-flipped"
  expect_rejected "TensorBoard on an event file without its last 20 bytes" 1 "want" -- \
    "$PY" tests/cli/tensorboard_check.py "$run" --events "$TMP/tb-cut"

  # Checkpoints and model.h5.
  for step in 20 32; do
    ckpt=$run/checkpoints/ckpt-0000000$step.h5
    "$CONFLUX" ckpt inspect "$ckpt" >"$TMP/inspect-$step.txt" 2>&1
    final=()
    [ "$step" = 32 ] && final=(--model "$run/model.h5" --digest "$(digest_of "$TMP/mlp.log")")
    if out=$("$PY" tests/cli/h5_check.py checkpoint "$ckpt" --inspect "$TMP/inspect-$step.txt" "${final[@]}" 2>&1); then
      ok "h5py: $out"
    else
      not_ok "h5py on $ckpt" "$out"
    fi
  done
  # A flipped weight: h5py still reads it, the documented checksum no longer matches, and the
  # one recomputed here is the one conflux computes.
  cp "$run/checkpoints/ckpt-000000020.h5" "$TMP/flipped.h5"
  "$PY" -c 'import sys, h5py
o = h5py.File(sys.argv[1], "r")["model/layer3.linear.weight"].id.get_offset() + 1001
f = open(sys.argv[1], "r+b"); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 0xff]))' "$TMP/flipped.h5"
  computed=$("$CONFLUX" ckpt verify "$TMP/flipped.h5" 2>&1 | grep -oP 'computed \Kcrc32c:[0-9a-f]{8}')
  expect_rejected "h5py on a checkpoint with a flipped weight byte" 1 "recomputed ${computed:-?}" -- \
    "$PY" tests/cli/h5_check.py checkpoint "$TMP/flipped.h5" --inspect "$TMP/inspect-20.txt"
  damage "$run/checkpoints/ckpt-000000020.h5" "$TMP/cut.h5" cut
  expect_rejected "h5py on a checkpoint without its last 20 bytes" 1 "truncated file" -- \
    "$PY" tests/cli/h5_check.py checkpoint "$TMP/cut.h5" --inspect "$TMP/inspect-20.txt"

  # A converted dataset.
  "$CONFLUX" data convert --dataset mnist --output "$TMP/mnist.h5" >"$TMP/convert.log" 2>&1 &&
    "$CONFLUX" data info "$TMP/mnist.h5" >"$TMP/info.txt" 2>&1
  if out=$("$PY" tests/cli/h5_check.py converted "$TMP/mnist.h5" --info "$TMP/info.txt" --source "$DATA/mnist" 2>&1); then
    ok "h5py: $out"
  else
    not_ok "h5py on conflux data convert's file" "$out$(cat "$TMP/convert.log")"
  fi
  damage "$TMP/mnist.h5" "$TMP/mnist-cut.h5" cut
  expect_rejected "h5py on a converted dataset without its last 20 bytes" 1 "cannot read" -- \
    "$PY" tests/cli/h5_check.py converted "$TMP/mnist-cut.h5" --info "$TMP/info.txt" --source "$DATA/mnist"

  # ONNX Runtime: the MLP on 64 test images.
  "$CONFLUX" export --model "$run/model.h5" --config "$run/config.toml" --output "$TMP/mlp-onnx/model.onnx" \
    --test-samples 64 >"$TMP/export-mlp.log" 2>&1
  evalline=$("$CONFLUX" eval --model "$run/model.h5" --config "$run/config.toml" --set data.test_limit=64 2>&1 | grep '^eval:')
  if out=$("$PY" tests/cli/ort_check.py "$TMP/mlp-onnx/model.onnx" --labels "mnist:$DATA/mnist/t10k-labels-idx1-ubyte.gz" \
    --eval "$evalline" 2>&1); then
    ok "ONNX Runtime, MLP: $(grep -oP 'max \|onnxruntime - conflux\| = \S+' <<<"$out") on 64 test images; $(grep -oP 'onnxruntime on .*' <<<"$out")"
  else
    not_ok "ONNX Runtime on the exported MLP" "$out$(cat "$TMP/export-mlp.log")"
  fi
  cp -r "$TMP/mlp-onnx" "$TMP/mlp-cut"
  damage "$TMP/mlp-onnx/model.onnx" "$TMP/mlp-cut/model.onnx" cut
  expect_rejected "ONNX Runtime on a model.onnx without its last 20 bytes" 2 "ONNX Runtime refuses it" -- \
    "$PY" tests/cli/ort_check.py "$TMP/mlp-cut/model.onnx"
  cp -r "$TMP/mlp-onnx" "$TMP/mlp-changed"
  "$PY" -c 'import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1]); t = m.graph.initializer[0]; a = numpy_helper.to_array(t).copy()
a.flat[0] += 0.5; t.CopyFrom(numpy_helper.from_array(a, t.name)); onnx.save(m, sys.argv[1])' "$TMP/mlp-changed/model.onnx"
  expect_rejected "ONNX Runtime on a model.onnx with one weight changed by 0.5" 1 "max |onnxruntime - conflux|" -- \
    "$PY" tests/cli/ort_check.py "$TMP/mlp-changed/model.onnx"
else
  skip "TensorBoard, checkpoint, converted dataset and MLP export checks: MNIST not found under $DATA"
fi

# --- CIFAR-10: a residual CNN with batch norm exported; a pack of real images ------------------
if [ -d "$DATA/cifar-10" ]; then
  cat >"$TMP/res.toml" <<'TOML'
[run]
name = "clients_resnet"
seed = 5
[cluster]
trainers = 1
[data]
dataset = "cifar10"
train_limit = 4096
test_limit = 64
[transform]
mean = [0.49, 0.48, 0.45]
std = [0.25, 0.24, 0.26]
[train]
epochs = 2
batch_size = 64
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
type = "dropout"
rate = 0.2
[[model.layers]]
type = "globalavgpool"
[[model.layers]]
type = "linear"
out = 10
TOML
  "$CONFLUX" train --config "$TMP/res.toml" --set "run.dir=$TMP/res" >"$TMP/res.log" 2>&1 &&
    "$CONFLUX" export --model "$TMP/res/model.h5" --config "$TMP/res/config.toml" \
      --output "$TMP/res-onnx/model.onnx" --test-samples 64 >"$TMP/export-res.log" 2>&1
  evalline=$("$CONFLUX" eval --model "$TMP/res/model.h5" --config "$TMP/res/config.toml" 2>&1 | grep '^eval:')
  if out=$("$PY" tests/cli/ort_check.py "$TMP/res-onnx/model.onnx" --labels "cifar10:$DATA/cifar-10/test_batch.bin" \
    --eval "$evalline" 2>&1); then
    ok "ONNX Runtime, residual CNN with batch norm, add, concat, dropout: $(grep -oP 'max \|onnxruntime - conflux\| = \S+' <<<"$out") on 64 test images; $(grep -oP 'onnxruntime on .*' <<<"$out")"
  else
    not_ok "ONNX Runtime on the exported residual CNN" "$out$(cat "$TMP/res.log" "$TMP/export-res.log")"
  fi

  "${CONFLUX_BIN:-build/bin}/conflux-bench" make-images --data "$DATA" --out "$TMP/images" --train 200 --val 100 \
    --size 0 >"$TMP/images.log" 2>&1
  packed=$("$CONFLUX" data pack --dataset image-folder --path "$TMP/images" --out "$TMP/pack" 2>&1 | grep '^wrote')
  if out=$("$PY" tests/cli/h5_check.py pack "$TMP/pack" --root "$TMP/images" --summary "$packed" 2>&1); then
    ok "h5py: $out"
  else
    not_ok "h5py on conflux data pack's files" "$out"
  fi
  cp -r "$TMP/pack" "$TMP/pack-flipped"
  damage "$TMP/pack/train-00000.h5" "$TMP/pack-flipped/train-00000.h5"
  expect_rejected "h5py on a pack with a flipped byte in a shard" 1 "SHA-256" -- \
    "$PY" tests/cli/h5_check.py pack "$TMP/pack-flipped" --root "$TMP/images" --summary "$packed"
else
  skip "residual CNN export and pack checks: CIFAR-10 not found under $DATA"
fi

summary
