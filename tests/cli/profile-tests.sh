#!/usr/bin/env bash
# Command-line tests of profiling and the automatic offload ratio: an input-bound job (heavy
# CIFAR-10 augmentation, a linear model) with data.offload_ratio = "auto" offloads, logs its
# decision with the reason, and ends with the same weights as a run with ratio 0; a
# compute-bound job stays at ratio 0; profile-trainer0.jsonl and the merged timeline.json hold
# what they promise; bad settings are clear errors.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

if [ ! -d "$DATA/cifar-10" ] || [ ! -d "$DATA/mnist" ]; then
  echo "skip - profile CLI tests: CIFAR-10 or MNIST not found under $DATA"
  cli_summary
  exit
fi

# Heavy augmentation and a model that costs almost nothing: the input pipeline is the
# bottleneck by far.
cat >"$TMP/input-bound.toml" <<'TOML'
[run]
name = "input-bound"
seed = 5
[cluster]
trainers = 1
[data]
dataset = "cifar10"
train_limit = 7680
test_limit = 200
[transform]
resized_crop = 32
hflip = true
rotation_degrees = 15
brightness = 0.4
contrast = 0.4
saturation = 0.4
blur_kernel = 5
blur_probability = 1.0
cutout_size = 8
mean = [0.4914, 0.4822, 0.4465]
std = [0.2470, 0.2435, 0.2616]
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = 10
[train]
batch_size = 128
lr = 0.01
log_every = 0
[profile]
initial_steps = 2
steps = 8
interval_s = 0.1
TOML

run_input_bound() {  # NAME [--set ...]
  "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config "$TMP/input-bound.toml" \
    --set "run.dir=$TMP/run-$1" "${@:2}" >"$TMP/$1.log" 2>&1
}

run_input_bound fixed0 --set data.offload_ratio=0
base=$(digest_of "$TMP/fixed0.log")
run_input_bound auto --set data.offload_ratio=auto
rc=$?
d=$(digest_of "$TMP/auto.log")
decision=$(grep -m1 'offload: trainer 0 at step' "$TMP/auto.log")
served=$(grep -oP 'worker \d+: served \K[0-9]+' "$TMP/auto.log" | awk '{ s += $1 } END { print s + 0 }')
if [ "$rc" -eq 0 ] && [ -n "$base" ] && [ "$d" = "$base" ] &&
  grep -q 'start-up profile over 8 steps: input-bound' <<<"$decision" &&
  grep -qP 'ratio 0\.00 -> (0\.[1-9]|0\.0[1-9]|1\.00)' <<<"$decision" && [ "$served" -gt 0 ]; then
  ok "input-bound, auto: offloads ($served batches from workers), same weights as ratio 0 ($d)"
else
  not_ok "input-bound auto: rc $rc digest '$d' (want '$base'), served '$served', decision '$decision'" \
    "$(cat "$TMP/auto.log")"
fi

# One profile line per window, with the per-worker figures.
jsonl="$TMP/run-auto/profile-trainer0.jsonl"
if [ -s "$jsonl" ] && python3 - "$jsonl" <<'PY'; then
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) >= 3, len(lines)
assert sum(l["steps"] for l in lines) == 60, sum(l["steps"] for l in lines)
assert all(len(l["workers"]) == 2 for l in lines)
assert any(w["answers"] > 0 and w["service_batches_per_s"] > 0 for l in lines for w in l["workers"])
assert any(l["offload_ratio"] > 0 for l in lines)
for key in ("data_wait_ms", "compute_ms", "sync_ms", "callbacks_ms", "local_batches_per_s"):
    assert key in lines[0], key
PY
  ok "profile-trainer0.jsonl: windows cover all 60 steps, with per-worker service rates"
else
  not_ok "profile-trainer0.jsonl" "$(head -c 2000 "$jsonl" 2>&1)"
fi

# The timeline: every rank's process, the steps, builds on workers and the trainer's own
# preprocessing thread, and the decision.
timeline="$TMP/run-auto/timeline.json"
if python3 - "$timeline" <<'PY'; then
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
assert names == {"trainer 0 (rank 0)", "worker 0 (rank 1)", "worker 1 (rank 2)"}, names
threads = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
assert {"main", "local preprocessing"} <= threads, threads
spans = [e for e in events if e.get("ph") == "X"]
assert sum(1 for e in spans if e["name"] == "step") == 60
assert any(e["name"] == "build batch" and e["pid"] != 0 for e in spans)
assert any(e["name"] == "build batch" and e["pid"] == 0 for e in spans)
assert any(e["name"] == "data wait" for e in spans)
assert any(e["name"] == "checkpoint capture" for e in spans)
assert any(e.get("ph") == "C" and e["name"] == "requests in flight" for e in events)
decisions = [e for e in events if e.get("ph") == "i" and e["name"] == "offload decision"]
assert decisions and "input-bound" in decisions[0]["args"]["reason"], decisions
PY
  ok "timeline.json: 3 ranks merged, steps, builds on both sides, checkpoint, requests, the decision"
else
  not_ok "timeline.json" "$(head -c 1500 "$timeline" 2>&1)"
fi

# Compute-bound (MNIST MLP: cheap preprocessing): auto keeps every batch local.
"${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml "${QUICK[@]}" \
  --set cluster.trainers=1 --set data.offload_ratio=auto --set profile.initial_steps=1 \
  --set profile.steps=4 --set "run.dir=$TMP/run-mnist" \
  >"$TMP/mnist.log" 2>&1
if grep -q 'not input-bound' "$TMP/mnist.log" &&
  grep -q 'trainer 0: batches 40 local, 0 from workers' "$TMP/mnist.log"; then
  ok "compute-bound, auto: not input-bound, every batch built locally"
else
  not_ok "compute-bound auto" "$(cat "$TMP/mnist.log")"
fi

expect_fail "offload_ratio must be auto or a number" 2 \
  'data.offload_ratio: expected "auto" or a number in [0, 1], got string' -- \
  "${MPIRUN[@]}" -np 1 "$CONFLUX" train --config configs/mnist_mlp.toml --set cluster.trainers=1 \
  --set 'data.offload_ratio="fast"'
expect_fail "auto needs the profiler" 2 'needs the profiler' -- \
  "${MPIRUN[@]}" -np 1 "$CONFLUX" train --config configs/mnist_mlp.toml --set cluster.trainers=1 \
  --set data.offload_ratio=auto --set profile.enabled=false

cli_summary
