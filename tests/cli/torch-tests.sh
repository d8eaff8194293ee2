#!/usr/bin/env bash
# Command-line tests of tools/conflux_to_torch.py: the weights of a tiny MNIST MLP and of a tiny
# CIFAR-10 CNN (every layer type; conv stride and padding, overlapping and default-stride
# maxpool, centre crop) loaded into PyTorch score the same test samples as `conflux eval`: the
# same count of correct predictions, the loss within 1e-4 relative of the run's own unrounded
# test loss (metrics.jsonl) and of conflux eval's printed one. A small residual graph (batch
# norm 2-D and 1-D, add, concat, dropout, a forward reference) trained briefly gives, as an
# fx GraphModule and as its TorchScript, the logits conflux exports for 64 test images. A config
# of another architecture, a corrupted tensor, a missing running statistic and an unknown input
# name exit 2 naming the tensor or layer. Skipped without torch/h5py in Debian's python.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
PY=${CONFLUX_TORCH_PYTHON:-/usr/bin/python3}
TOOL=tools/conflux_to_torch.py
N=500

if ! why=$("$PY" -c 'import numpy, h5py, torch' 2>&1); then
  ok "conflux_to_torch (skipped: $PY lacks numpy/h5py/torch: $(tail -1 <<<"$why"))"
  cli_summary
  exit
fi
if [ ! -d "$DATA/mnist" ] || [ ! -d "$DATA/cifar-10" ]; then
  ok "conflux_to_torch (skipped: MNIST or CIFAR-10 not found under $DATA)"
  cli_summary
  exit
fi

# A small CNN with every image layer type: conv k3 s2 p1, overlapping maxpool k3 s2 p1, conv p1,
# maxpool k2 with the default stride, avgpool k2 s1, globalavgpool, linear (the MLP has flatten);
# eval centre-crops 30 of 32 pixels (offset 1).
cat >"$TMP/cnn.toml" <<'EOF'
[data]
dataset = "cifar10"
[transform]
pad = 2
crop = 30
hflip = true
mean = [0.4914, 0.4822, 0.4465]
std = [0.2470, 0.2435, 0.2616]
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
padding = 1
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
[train]
batch_size = 64
lr = 0.05
momentum = 0.9
EOF

# train NAME CONFIG: a one-epoch run on 2000 samples into $TMP/NAME, its test on the first $N.
train() {
  "$CONFLUX" train --config "$2" --set cluster.trainers=1 --set data.train_limit=2000 \
    --set data.test_limit=$N --set train.epochs=1 --set train.log_every=0 \
    --set "run.dir=$TMP/$1" >"$TMP/$1.log" 2>&1
}

# compare NAME: conflux eval and the script's --eval on the same $N samples of run NAME.
compare() {
  local run=$TMP/$1 c t
  c=$("$CONFLUX" eval --model "$run/model.h5" --config "$run/config.toml" --set data.test_limit=$N 2>&1)
  t=$("$PY" "$TOOL" "$run" --eval "$DATA" --limit $N 2>&1)
  if "$PY" - "$c" "$t" "$run/metrics.jsonl" $N <<'PY'; then
import json, re, sys
conflux, torch_out, metrics, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
line = r"eval: test split, (\d+) samples: loss ([0-9.]+), accuracy ([0-9.]+)%"
c = re.search(r"^" + line, conflux, re.M)
t = re.search(r"^torch " + line, torch_out, re.M)
d = re.search(r"^torch eval detail: (\d+) correct of (\d+), mean loss (\S+)", torch_out, re.M)
run_loss = json.loads(open(metrics).read().splitlines()[-1])["test_loss"]
assert c and t and d, "missing eval lines"
correct, loss = int(d[1]), float(d[3])
# The same correct count: conflux prints the accuracy to 0.01 %, finer than 1 sample in n.
assert int(c[1]) == int(t[1]) == int(d[2]) == n, "sample counts"
assert round(float(c[3]) * n / 100) == correct and c[3] == t[3], "accuracies differ"
assert abs(loss - run_loss) <= 1e-4 * run_loss, f"loss {loss} vs the run's {run_loss}"
# conflux eval prints 4 decimals: agreement within 1e-4 relative beyond that rounding.
assert abs(loss - float(c[2])) <= 5e-5 + 1e-4 * loss, f"loss {loss} vs eval's {c[2]}"
print(f"{correct}/{n} correct, loss {loss:.8f} (run {run_loss:.8f})")
PY
    ok "$1: torch scores what conflux eval scores ($(grep -o '^torch eval: .*' <<<"$t"))"
  else
    not_ok "$1: torch and conflux eval differ" "$c"$'\n'"$t"
  fi
}

if train mlp configs/mnist_mlp.toml && train cnn "$TMP/cnn.toml"; then
  compare mlp
  compare cnn
  if "$PY" "$TOOL" --model "$TMP/cnn/model.h5" --config "$TMP/cnn/config.toml" \
    --output "$TMP/cnn.pt" --torchscript "$TMP/cnn.ts" >"$TMP/save.log" 2>&1 &&
    "$PY" - "$TMP/cnn.pt" "$TMP/cnn.ts" "$TMP/cnn/model.h5" <<'PY'; then
import sys, h5py, numpy as np, torch
state, scripted = torch.load(sys.argv[1]), torch.jit.load(sys.argv[2])
with h5py.File(sys.argv[3]) as f:
    w = f["params/layer3.conv2d.weight"][()]
assert np.array_equal(state["3.weight"].numpy(), w)
assert torch.equal(scripted.state_dict()["8.bias"], state["8.bias"])
PY
    ok "--output and --torchscript save the file's weights (layer i is module i)"
  else
    not_ok "saving the state_dict / TorchScript" "$(cat "$TMP/save.log")"
  fi
else
  not_ok "training the tiny models" "$(cat "$TMP/mlp.log" "$TMP/cnn.log" 2>/dev/null)"
fi

# --- a graph: batchnorm (per channel and per feature), add, concat, dropout ------------------
# The CNN's data and transform; layer 3 names a layer written below it ("r"), so conflux runs
# 0 1 2 5 6 7 8 3 4 9 ...
{
  sed -n '1,/^std = /p' "$TMP/cnn.toml"
  cat <<'EOF'
[[model.layers]]
type = "conv2d"
out = 8
stride = 2
padding = 1
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "relu"
name = "a"
[[model.layers]]
type = "conv2d"
out = 4
kernel = 1
inputs = ["r"]
[[model.layers]]
type = "batchnorm"
momentum = 0.3
name = "side"
[[model.layers]]
type = "conv2d"
out = 8
padding = 1
inputs = ["a"]
[[model.layers]]
type = "batchnorm"
name = "bn2"
[[model.layers]]
type = "add"
inputs = ["bn2", "a"]
[[model.layers]]
type = "relu"
name = "r"
[[model.layers]]
type = "concat"
inputs = ["r", "side"]
[[model.layers]]
type = "maxpool"
[[model.layers]]
type = "globalavgpool"
[[model.layers]]
type = "batchnorm"
eps = 1e-3
[[model.layers]]
type = "dropout"
rate = 0.25
[[model.layers]]
type = "linear"
out = 10
[train]
batch_size = 64
lr = 0.1
momentum = 0.9
EOF
} >"$TMP/graph.toml"
G=$TMP/graph
if "$CONFLUX" train --config "$TMP/graph.toml" --set cluster.trainers=1 --set data.train_limit=512 \
  --set data.test_limit=64 --set train.epochs=1 --set train.log_every=0 --set "run.dir=$G" \
  >"$G.log" 2>&1 &&
  "$CONFLUX" export --model "$G/model.h5" --config "$G/config.toml" --output "$G/onnx/model.onnx" \
    --test-samples 64 >>"$G.log" 2>&1 &&
  "$PY" "$TOOL" "$G" --torchscript "$G/model.ts" >"$G.torch.log" 2>&1 &&
  "$PY" - "$G" "$TOOL" >>"$G.torch.log" 2>&1 <<'PY'; then
import importlib.util, sys, numpy as np, onnx, torch
from onnx import numpy_helper
run, tool = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("c2t", tool)
c2t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(c2t)
module = c2t.load_model(f"{run}/model.h5", f"{run}/config.toml")
assert isinstance(module, torch.fx.GraphModule) and not module.training
assert isinstance(getattr(module, "1"), torch.nn.BatchNorm2d)
assert isinstance(getattr(module, "12"), torch.nn.BatchNorm1d) and getattr(module, "12").eps == 1e-3
assert getattr(module, "4").momentum == 0.3 and getattr(module, "13").p == 0.25
def tensor(name):
    proto = onnx.TensorProto()
    proto.ParseFromString(open(f"{run}/onnx/test_data_set_0/{name}.pb", "rb").read())
    return numpy_helper.to_array(proto)
x, expected = tensor("input_0"), tensor("output_0")
assert x.shape == (64, 3, 30, 30) and expected.shape == (64, 10)
# The running statistics moved in training (eval must use them, not the initial 0 and 1).
assert float(module.state_dict()["1.running_var"].sub(1).abs().max()) > 1e-3
with torch.no_grad():
    for which, m in (("fx", module), ("torchscript", torch.jit.load(f"{run}/model.ts"))):
        got = m(torch.from_numpy(x.copy())).numpy()
        diff = float(np.abs(got - expected).max())
        # float32 sums in another order: within 1e-5 of the largest logit, and the same classes.
        assert diff <= 1e-5 * float(np.abs(expected).max()) + 1e-6, f"{which}: max diff {diff}"
        assert (got.argmax(1) == expected.argmax(1)).all(), f"{which}: classes differ"
        print(f"{which}: 64 logits rows, max |torch - conflux| = {diff:.3g}")
PY
  ok "graph (batchnorm, add, concat, dropout): torch and TorchScript give conflux's logits ($(grep -o 'max |.*' "$G.torch.log" | head -1))"
else
  not_ok "the graph model in PyTorch" "$(cat "$G.log" "$G.torch.log" 2>/dev/null | tail -30)"
fi
cp "$G/model.h5" "$TMP/no_stats.h5"
"$PY" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r+") as f: del f["params/layer12.batchnorm.running_var"]' "$TMP/no_stats.h5"
expect_fail "a model.h5 without a running statistic" 2 \
  "$TMP/no_stats.h5: parameter layer12.batchnorm.running_var is missing" -- \
  "$PY" "$TOOL" --model "$TMP/no_stats.h5" --config "$G/config.toml"
sed "s/^inputs = \[ 'r' \]$/inputs = [ 'rr' ]/" "$G/config.toml" >"$TMP/bad_input.toml"
expect_fail "an input naming no layer" 2 "layer 3 (conv2d): input 'rr' is not the name of another layer" -- \
  "$PY" "$TOOL" --model "$G/model.h5" --config "$TMP/bad_input.toml"

# --- bad inputs: exit 2 naming the tensor ---------------------------------------------------
expect_fail "model.h5 with another architecture's config" 2 \
  "$TMP/mlp/model.h5: parameter layer0.conv2d.weight is missing" -- \
  "$PY" "$TOOL" --model "$TMP/mlp/model.h5" --config "$TMP/cnn/config.toml"
sed 's/^out = 512$/out = 500/' "$TMP/mlp/config.toml" >"$TMP/narrow.toml"
expect_fail "a config with another hidden width" 2 \
  "parameter layer1.linear.weight has shape [512, 784] but the config implies [500, 784]" -- \
  "$PY" "$TOOL" --model "$TMP/mlp/model.h5" --config "$TMP/narrow.toml"
cp "$TMP/cnn/model.h5" "$TMP/corrupt.h5"
"$PY" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r+") as f: f["params/layer8.linear.bias"][0] += 1' "$TMP/corrupt.h5"
expect_fail "a changed weight" 2 "$TMP/corrupt.h5: the weights do not match the stored digest" -- \
  "$PY" "$TOOL" --model "$TMP/corrupt.h5" --config "$TMP/cnn/config.toml"

cli_summary
