#!/usr/bin/env bash
# `conflux export --format onnx`: the exported file passes ONNX's own checker, and an
# independent numpy evaluation of its graph (tests/cli/onnx_check.py) gives conflux's logits on
# the test images of the exported test data set; bad input exits 2 and leaves a good file intact.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3  # Debian's interpreter: python3-onnx and python3-numpy live there
if ! "$PY" -c 'import onnx, numpy' 2>/dev/null; then
  ok "ONNX export checks (skipped: $PY lacks the onnx or numpy module; make test-deps installs them)"
  cli_summary
  exit
fi

# A CNN that uses every image layer type with its options: conv2d with stride and padding,
# maxpool with an explicit stride and padding and with the default stride, avgpool,
# globalavgpool, linear (the MLP has flatten).
cat >"$TMP/cnn.toml" <<'EOF'
[run]
name = "export_cnn"
seed = 7
[cluster]
trainers = 1
[data]
dataset = "cifar10"
train_limit = 512
test_limit = 64
[transform]
mean = [0.49, 0.48, 0.45]
std = [0.25, 0.24, 0.26]
[train]
epochs = 1
batch_size = 64
log_every = 0
[[model.layers]]
type = "conv2d"
out = 8
kernel = 3
stride = 2
padding = 1
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool"
kernel = 3
stride = 2
padding = 1
[[model.layers]]
type = "conv2d"
out = 16
kernel = 3
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool"
kernel = 2
[[model.layers]]
type = "avgpool"
kernel = 2
stride = 1
[[model.layers]]
type = "globalavgpool"
[[model.layers]]
type = "linear"
out = 10
EOF

# train_and_export NAME CONFIG [--set ...]: a short run in $TMP/NAME, exported to
# $TMP/NAME-onnx/model.onnx; sets out and rc.
train_and_export() {
  local name=$1 config=$2
  shift 2
  if ! timeout 300 "$CONFLUX" train --config "$config" "$@" --set "run.dir=$TMP/$name" >"$TMP/$name.log" 2>&1; then
    out=$(cat "$TMP/$name.log")
    rc=3
    return
  fi
  out=$("$CONFLUX" export --model "$TMP/$name/model.h5" --config "$TMP/$name/config.toml" \
    --output "$TMP/$name-onnx/model.onnx" --test-samples 32 2>&1)
  rc=$?
}

# check_export NAME: ONNX's checker and the numpy evaluation agree with conflux's logits.
check_export() {
  local name=$1 check
  check=$("$PY" tests/cli/onnx_check.py "$TMP/$name-onnx/model.onnx" 2>&1)
  local crc=$?
  if [ "$rc" -eq 0 ] && [ "$crc" -eq 0 ] && grep -q "same class 32/32" <<<"$check"; then
    ok "$name exported: $(grep -oP 'nodes: \K.*' <<<"$check"); $(grep -oP 'max \|numpy - conflux\| = \S+' <<<"$check") on 32 test images"
  else
    not_ok "$name: export exit $rc, check exit $crc" "$out"$'\n'"$check"
  fi
}

train_and_export mlp configs/mnist_mlp.toml --set cluster.trainers=1 --set train.epochs=1 \
  --set data.train_limit=1000 --set data.test_limit=64 --set train.log_every=0
check_export mlp
train_and_export cnn "$TMP/cnn.toml"
check_export cnn

# The file carries what a user needs to feed it.
meta=$("$PY" - "$TMP/cnn-onnx/model.onnx" "$TMP/cnn/model.h5" <<'EOF'
import sys, onnx
props = {p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}
print(props.get("conflux.normalize.mean"), props.get("conflux.normalize.std"), props.get("conflux.dataset"),
      props.get("conflux.weights_digest"))
EOF
)
digest=$(h5dump -a /digest "$TMP/cnn/model.h5" 2>/dev/null | grep -oP '"\K[0-9a-f]{64}')
if [ "$meta" = "0.49,0.48,0.45 0.25,0.24,0.26 cifar10 $digest" ] && [ -n "$digest" ]; then
  ok "metadata: the input normalisation, the dataset and model.h5's weights digest"
else
  not_ok "metadata: '$meta' (digest '$digest')"
fi

# The numpy evaluation can fail: logits that differ in one value are caught.
cp -r "$TMP/cnn-onnx" "$TMP/tampered"
"$PY" - "$TMP/tampered/test_data_set_0/output_0.pb" <<'EOF'
import sys, onnx
from onnx import numpy_helper
t = onnx.TensorProto(); t.ParseFromString(open(sys.argv[1], "rb").read())
a = numpy_helper.to_array(t).copy(); a[5, 3] += 0.01
open(sys.argv[1], "wb").write(numpy_helper.from_array(a, t.name).SerializeToString())
EOF
"$PY" tests/cli/onnx_check.py "$TMP/tampered/model.onnx" >"$TMP/tampered.log" 2>&1
rc=$?
if [ "$rc" -eq 1 ]; then
  ok "the check fails on logits changed by 0.01 in one value (exit 1)"
else
  not_ok "tampered logits: check exit $rc (want 1)" "$(cat "$TMP/tampered.log")"
fi

# Bad input: exit 2 with the reason; an existing export is left as it was.
before=$(sha256sum "$TMP/mlp-onnx/model.onnx")
expect_fail "export with the config of another architecture" 2 \
  "conflux export --model: model file $TMP/mlp/model.h5: parameter layer0.conv2d.weight is missing" -- \
  "$CONFLUX" export --model "$TMP/mlp/model.h5" --config "$TMP/cnn.toml" --output "$TMP/mlp-onnx/model.onnx"
if [ "$(sha256sum "$TMP/mlp-onnx/model.onnx")" = "$before" ]; then
  ok "the failed export left the earlier model.onnx intact"
else
  not_ok "the failed export changed the earlier model.onnx"
fi
expect_fail "export --format other than onnx" 2 "onnx is the only format, not 'tflite'" -- \
  "$CONFLUX" export --model "$TMP/mlp/model.h5" --config "$TMP/mlp/config.toml" --format tflite --output "$TMP/x.tflite"
expect_fail "export of a missing model file" 2 "$TMP/none.h5" -- \
  "$CONFLUX" export --model "$TMP/none.h5" --config "$TMP/mlp/config.toml" --output "$TMP/none.onnx"
expect_fail "export without --output" 2 "output" -- \
  "$CONFLUX" export --model "$TMP/mlp/model.h5" --config "$TMP/mlp/config.toml"

cli_summary
