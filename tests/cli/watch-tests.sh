#!/usr/bin/env bash
# Command-line tests of watching a run: time-stamped, rank-tagged log lines with an ETA;
# per-rank log files; steps.jsonl; TensorBoard event files, read back by an independent decoder
# (tests/tools/tfevents_decode.py) and compared with steps.jsonl and metrics.jsonl; the
# streamed per-rank timeline, which parses after a kill -9 of rank 0 and covers the run up to
# at most one flush interval before the kill; TensorBoard's view of a resumed run.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
DECODE=tests/tools/tfevents_decode.py

if [ ! -d "$DATA/mnist" ]; then
  echo "skip - watch CLI tests: MNIST not found under $DATA"
  cli_summary
  exit
fi

# 2 trainers and 1 worker, half the batches offloaded: every rank has work to log.
RUN=(--config configs/mnist_mlp.toml --set cluster.trainers=2 --set data.offload_ratio=0.5
  --set data.train_limit=6000 --set data.test_limit=500 --set train.epochs=2
  --set train.log_every=10)
dir=$TMP/watch
"${MPIRUN[@]}" -np 3 "$CONFLUX" train "${RUN[@]}" --set "run.dir=$dir" >"$TMP/watch.log" 2>&1
rc=$?

# Log lines: "[conflux rN YYYY-mm-dd HH:MM:SS.mmm] ..." on every conflux line of every rank.
stamp='^\[conflux r[0-9]+ [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\] '
lines=$(grep -c '^\[conflux' "$TMP/watch.log")
stamped=$(grep -cE "$stamp" "$TMP/watch.log")
if [ "$rc" -eq 0 ] && [ "$lines" -gt 10 ] && [ "$lines" -eq "$stamped" ] &&
  [ "$(grep -cE "$stamp(trainer [01]/2|worker 0/1) \(host " "$TMP/watch.log")" -eq 3 ]; then
  ok "every one of $lines log lines carries rank and time; each rank names its host"
else
  not_ok "log lines: exit $rc, $stamped of $lines stamped" "$(cat "$TMP/watch.log")"
fi
if grep -qE "${stamp}epoch 2 step +47/47 .* lr 0.05 +data wait [0-9.]+ ms/step +ETA 0s$" "$TMP/watch.log" &&
  grep -qE "${stamp}epoch 1 step +10/47 .* ETA [0-9]+s$" "$TMP/watch.log"; then
  ok "step lines show learning rate, data wait and an ETA that reaches 0s"
else
  not_ok "step lines" "$(grep 'step ' "$TMP/watch.log")"
fi

# Per-rank log files: each holds its own rank's lines, including its role line.
bad=""
for r in 0 1 2; do
  f=$dir/logs/rank-$r.log
  role=$(case $r in 0) echo "trainer 0/2" ;; 1) echo "trainer 1/2" ;; 2) echo "worker 0/1" ;; esac)
  if ! grep -qE "^\[conflux r$r [^]]*\] $role \(host " "$f" 2>/dev/null ||
    grep -qvE "^\[conflux r$r " "$f"; then bad+=" rank-$r.log"; fi
done
if [ -z "$bad" ] && grep -q "epoch 2/2 done" "$dir/logs/rank-0.log"; then
  ok "logs/rank-N.log: each rank's own lines, its role first"
else
  not_ok "per-rank logs:$bad" "$(head -5 "$dir"/logs/*.log 2>&1)"
fi

# steps.jsonl: a line per report (steps 10..40 and 47 of each 47-step epoch).
if python3 - "$dir/steps.jsonl" <<'PY'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps = [r["step"] for r in rows]
want = [10, 20, 30, 40, 47, 57, 67, 77, 87, 94]
assert steps == want, steps
assert all(0 <= r["offload_ratio"] <= 1 and r["learning_rate"] == 0.05 for r in rows)
assert rows[-1]["eta_s"] == 0 and rows[0]["eta_s"] > 0, rows
assert all(a["time_s"] < b["time_s"] for a, b in zip(rows, rows[1:]))
assert all(r["loss"] > 0 and r["samples_per_s"] > 0 and r["data_wait_ms"] >= 0 for r in rows)
PY
  ok "steps.jsonl: one line per report, steps, time, ETA, learning rate and offload ratio"
else
  not_ok "steps.jsonl" "$(cat "$dir/steps.jsonl")"
fi

# TensorBoard: the independent decoder reads back exactly the losses of steps.jsonl (as float32)
# and the epochs' test accuracy of metrics.jsonl.
# compare_tensorboard DIR: TensorBoard's view of DIR's event files against its jsonl files.
compare_tensorboard() {
  python3 "$DECODE" "$1/tensorboard" >"$TMP/tb.jsonl" &&
    python3 - "$TMP/tb.jsonl" "$1/steps.jsonl" "$1/metrics.jsonl" <<'PY'
import json, struct, sys
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
tb = [json.loads(l) for l in open(sys.argv[1])]
steps = [json.loads(l) for l in open(sys.argv[2])]
metrics = [json.loads(l) for l in open(sys.argv[3])]
loss = [(s["step"], s["value"]) for s in tb if s["tag"] == "train/loss"]
want = [(r["step"], f32(r["loss"])) for r in steps]
assert loss == want, (loss, want)
for tag, key in (("train/learning_rate", "learning_rate"), ("input/offload_ratio", "offload_ratio")):
    assert [s["value"] for s in tb if s["tag"] == tag] == [f32(r[key]) for r in steps], tag
acc = [s["value"] for s in tb if s["tag"] == "epoch/test_accuracy"]
assert acc == [f32(m["test_accuracy"]) for m in metrics], (acc, metrics)
print(f"{len(loss)} step losses, {len(acc)} epoch accuracies")
PY
}
if out=$(compare_tensorboard "$dir" 2>&1) && [ "$(find "$dir/tensorboard" -name 'events.out.tfevents.*' | wc -l)" -eq 1 ]; then
  ok "TensorBoard event file decoded independently: $out equal to steps.jsonl / metrics.jsonl"
else
  not_ok "TensorBoard event file" "$out"
fi

# A damaged event file is refused by the decoder (the checksums are checked, not assumed).
cp "$(find "$dir/tensorboard" -name 'events.out.tfevents.*')" "$TMP/damaged.tfevents"
printf '\x00' | dd of="$TMP/damaged.tfevents" bs=1 seek=40 conv=notrunc 2>/dev/null
if ! python3 "$DECODE" "$TMP/damaged.tfevents" >/dev/null 2>&1; then
  ok "the decoder rejects an event file with a flipped byte"
else
  not_ok "the decoder accepted a damaged event file"
fi

# Streamed timeline: every rank's file is a complete trace; with the merged timeline.json.
if python3 - "$dir" <<'PY'; then
import json, sys
d = sys.argv[1]
merged = json.load(open(f"{d}/timeline.json"))["traceEvents"]
for r in range(3):
    doc = json.load(open(f"{d}/timeline/rank-{r}.json"))
    ev = doc["traceEvents"]
    assert doc["otherData"]["origin_unix_s"] > 1.7e9
    assert all(e["pid"] == r for e in ev)
    data = [e for e in ev if e["ph"] != "M"]
    assert len(data) == len([e for e in merged if e["pid"] == r and e["ph"] != "M"]), r
PY
  ok "timeline/rank-N.json: a complete trace per rank, the same events as timeline.json"
else
  not_ok "streamed timeline" "$(ls -la "$dir/timeline")"
fi

# kill -9 of rank 0 mid-run: its streamed timeline parses and reaches to within one flush
# interval (0.5 s) of the kill; steps.jsonl and the event file hold whole records.
kdir=$TMP/killed
KILLRUN=(--config configs/mnist_mlp.toml --set train.epochs=3 --set train.log_every=20
  --set checkpoint.every_steps=100 --set profile.timeline_flush_s=0.5)
"${MPIRUN[@]}" -np 2 "$CONFLUX" train "${KILLRUN[@]}" --set "run.dir=$kdir" >"$TMP/killed.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do [ "$(cat "$kdir/steps.jsonl" 2>/dev/null | wc -l)" -ge 12 ] && break; sleep 0.05; done
pid=$(grep -oP '^\[conflux r0 [^]]*\] trainer 0/2 \(host \S+, pid \K[0-9]+' "$TMP/killed.log")
sleep 0.7
killed_at=$(date +%s.%N)
kill -9 "$pid" 2>/dev/null
wait "$job"
if python3 - "$kdir/timeline/rank-0.json" "$killed_at" <<'PY'; then
import json, sys
doc = json.load(open(sys.argv[1]))
origin = doc["otherData"]["origin_unix_s"]
end = max(e["ts"] + e.get("dur", 0) for e in doc["traceEvents"] if e["ph"] != "M") / 1e6
gap = float(sys.argv[2]) - (origin + end)
print(f"last event {gap:.2f} s before the kill")
assert 0 <= gap <= 0.5 + 0.25, gap  # one flush interval, plus scheduling slack
PY
  ok "kill -9 of rank 0: timeline/rank-0.json parses and covers the run to within one flush interval"
else
  not_ok "timeline after kill -9 of rank 0 (pid '$pid')" "$(tail -c 300 "$kdir/timeline/rank-0.json")"
fi

# Resume: TensorBoard (honouring the resumed launch's session start) and steps.jsonl agree.
"${MPIRUN[@]}" -np 2 "$CONFLUX" train "${KILLRUN[@]}" --set "run.dir=$kdir" --resume auto \
  >"$TMP/resumed.log" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && out=$(compare_tensorboard "$kdir" 2>&1) &&
  [ "$(find "$kdir/tensorboard" -name 'events.out.tfevents.*' | wc -l)" -eq 2 ] &&
  grep -q 'resuming from' "$TMP/resumed.log" &&
  [ "$(grep -c "trainer 0/2 (host" "$kdir/logs/rank-0.log")" -eq 2 ]; then
  ok "resumed after kill -9: TensorBoard's view ($out) equals steps.jsonl; rank-0.log holds both launches"
else
  not_ok "resume after kill -9: exit $rc" "$out $(tail -5 "$TMP/resumed.log")"
fi

# train.clip_grad_norm: each steps.jsonl line ends with its step's gradient norm before
# clipping (above the threshold, which a clipped norm cannot be), TensorBoard holds the same
# values as train/grad_norm, and `conflux report` draws them beside the loss. A run without
# clipping (the first one) writes no grad_norm.
cdir=$TMP/clip
"${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/mnist_mlp.toml --set data.train_limit=2000 \
  --set data.test_limit=200 --set train.epochs=1 --set train.log_every=4 \
  --set train.clip_grad_norm=0.01 --set "run.dir=$cdir" >"$TMP/clip.log" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && python3 "$DECODE" "$cdir/tensorboard" >"$TMP/clip-tb.jsonl" &&
  out=$(python3 - "$cdir/steps.jsonl" "$dir/steps.jsonl" "$TMP/clip-tb.jsonl" <<'PY'
import json, struct, sys
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
rows = [json.loads(l) for l in open(sys.argv[1])]
norms = [r["grad_norm"] for r in rows]
assert len(rows) >= 4 and all(n > 0.01 for n in norms), norms
assert all(list(r)[-1] == "grad_norm" for r in rows), list(rows[0])
assert all("grad_norm" not in json.loads(l) for l in open(sys.argv[2]))
tb = [json.loads(l) for l in open(sys.argv[3])]
got = [(s["step"], s["value"]) for s in tb if s["tag"] == "train/grad_norm"]
assert got == [(r["step"], f32(r["grad_norm"])) for r in rows], (got, norms)
print(f"{len(norms)} norms from {min(norms):.3g} to {max(norms):.3g}")
PY
  ); then
  ok "train.clip_grad_norm: steps.jsonl and TensorBoard hold the norm before clipping ($out)"
else
  not_ok "gradient norm with train.clip_grad_norm: exit $rc" "$out $(tail -5 "$TMP/clip.log")"
fi
if command -v gnuplot >/dev/null; then
  if page=$("$CONFLUX" report "$cdir" 2>&1) && grep -q "steps.jsonl&#39;s grad_norm" "$page"; then
    ok "conflux report draws the gradient norm in the loss figure"
  else
    not_ok "conflux report of a clipped run" "$page"
  fi
else
  echo "skip - conflux report of a clipped run: gnuplot is not installed"
fi

cli_summary
