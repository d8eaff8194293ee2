#!/usr/bin/env bash
# Command-line tests of benchmarks/gpu_input_pipeline.sh (docs/gpu-input-pipeline.md) without a
# GPU: its smoke mode (DEVICE=cpu SMOKE=1, a CPU trainer, 32 px crops, batch 4) end to end on
# the path the GPU host takes, where CIFAR-10 is only a carried file of its first records
# (GPU_INPUT_CIFAR, tiled to a whole batch file): make-images, pack, conflux points at W = 1
# and 0 workers (a fixed ratio, auto and 1.0) with figures in rows.jsonl, results.csv and
# results.md, the PyTorch rows (run when this python3 has torch, else skipped rows saying why),
# DALI's skip note. Bad settings exit 2 naming the variable; no CIFAR-10 at all exits 3.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
BENCH=benchmarks/gpu_input_pipeline.sh
export CONFLUX_BIN=${CONFLUX_BIN:-build/bin}

if [ ! -f "$DATA/cifar-10/data_batch_1.bin" ]; then
  ok "gpu_input_pipeline (skipped: no CIFAR-10 under $DATA)"
  cli_summary
  exit
fi

expect_fail "DEVICE=tpu is refused" 2 "DEVICE=tpu: expected cuda or cpu" -- env DEVICE=tpu "$BENCH" "$TMP/x"
expect_fail "BUDGET_S=soon is refused" 2 "BUDGET_S=soon: expected a positive integer" -- \
  env BUDGET_S=soon "$BENCH" "$TMP/x"
expect_fail "WORKERS=many is refused" 2 "WORKERS=many: expected" -- env WORKERS=many "$BENCH" "$TMP/x"
expect_fail "MODELS=vgg is refused" 2 "unknown model 'vgg'" -- env MODELS=vgg "$BENCH" "$TMP/x"
expect_fail "no OUTDIR" 2 "usage:" -- "$BENCH"
mkdir -p "$TMP/nodata"
expect_fail "no CIFAR-10 anywhere exits 3" 3 "no CIFAR-10 for make-images" -- \
  env CONFLUX_DATA="$TMP/nodata" GPU_INPUT_CIFAR="$TMP/none.bin" DEVICE=cpu SMOKE=1 "$BENCH" "$TMP/x"
head -c 1000 "$DATA/cifar-10/data_batch_1.bin" >"$TMP/torn.bin"
expect_fail "a torn CIFAR-10 head is refused" 2 "not a whole number" -- \
  python3 benchmarks/gpu_input_lib.py tile-cifar "$TMP/torn.bin" "$TMP/t/data_batch_1.bin"

# gpu_input_lib.py's measurement on a stand-in for conflux that reports a step every 0.1 s of
# its own clock (time_s) and, after SIGUSR1, 3 more steps of 5 s each before exiting 75 as
# conflux does: the stop comes once 1 s was measured, the window ends at the signal, so
# samples/s is exactly 8 / 0.1 = 80 however many steps fit. A stand-in that never gets past its
# warm-up is stopped at its limit: a timeout row.
cat >"$TMP/fake.sh" <<'FAKE'
#!/usr/bin/env bash
# fake.sh STEPS_FILE MAX_STEPS
stop=0
trap 'stop=1' USR1
for ((k = 1; k <= $2; k++)); do
  printf '{"step": %d, "time_s": %s, "data_wait_ms": 1.5, "offload_ratio": 0.25}\n' "$k" \
    "$(awk -v k="$k" 'BEGIN{print k / 10}')" >>"$1"
  sleep 0.1
  [ "$stop" = 1 ] && break
done
[ "$stop" = 1 ] || { sleep 30 & wait; }
for k in 1 2 3; do echo "{\"step\": $((1000 + k)), \"time_s\": $((5 * k + 100))}" >>"$1"; done
exit 75
FAKE
chmod +x "$TMP/fake.sh"
lib_point() {  # name max_steps limit_s
  python3 benchmarks/gpu_input_lib.py conflux --json "$TMP/fake.jsonl" --log "$TMP/$1.log" \
    --steps-file "$TMP/$1.steps" --model m --workers 1 --ratio 0.25 --batch 8 --warmup 3 \
    --steps 1000 --min-steps 2 --measure-s 1 --limit-s "$3" --grace-s 5 -- \
    "$TMP/fake.sh" "$TMP/$1.steps" "$2"
}
lib_point stopped 1000 20 >/dev/null
lib_point stuck 2 3 >/dev/null
check=$(python3 - "$TMP/fake.jsonl" <<'PY'
import json, sys
stopped, stuck = [json.loads(l) for l in open(sys.argv[1])]
bad = []
if not (stopped["status"] == "ok" and stopped["exit_code"] == 75
        and stopped["samples_per_s"] == 80.0 and stopped["steps"] >= 5
        and stopped["data_wait_ms"] == 1.5 and stopped["ratio_mean"] == 0.25
        and (stopped["cpu_cores"] or 0) > 0):
    bad.append(f"stopped: {stopped}")
if not (stuck["status"] == "timeout" and "2 steps reported, 5 needed" in stuck["message"]):
    bad.append(f"stuck: {stuck}")
print("\n".join(bad) or "ok")
PY
)
if [ "$check" = ok ]; then
  ok "gpu_input_lib: stops once measured, window ends at the signal; a stuck run is a timeout row"
else
  not_ok "gpu_input_lib measurement" "$check"
fi

# The GPU host's way: no CIFAR-10 directory, 500 records carried.
head -c $((500 * 3073)) "$DATA/cifar-10/data_batch_1.bin" >"$TMP/head.bin"
OUT=$TMP/out
start=$SECONDS
log=$(env CONFLUX_DATA="$TMP/nodata" GPU_INPUT_CIFAR="$TMP/head.bin" DEVICE=cpu SMOKE=1 \
  WORKERS=1,0 BUDGET_S=100 "$BENCH" "$OUT" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$OUT/results.md" ] && [ -s "$OUT/results.csv" ]; then
  ok "smoke run: exit 0, results.md and results.csv written ($((SECONDS - start)) s)"
else
  not_ok "smoke run: exit $rc" "$log"
fi

# Every conflux point ran and measured: samples/s > 0, a data wait, busy CPU cores, at least
# MIN_STEPS (2) steps, the offload ratio it was given (auto: whatever it chose, in [0, 1]).
check=$(python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = {(0, 0.0), (1, 0.5), (1, "auto"), (1, 1.0)}
got = {(r["workers"], r["ratio"]) for r in rows if r["pipeline"] == "conflux"}
bad = [f"missing conflux points {sorted(map(str, want - got))}"] if want - got else []
for r in rows:
    if r["pipeline"] != "conflux":
        continue
    if r["status"] != "ok" or not r["samples_per_s"] > 0 or r["steps"] < 2 \
            or r["data_wait_ms"] is None or not (r["cpu_cores"] or 0) > 0:
        bad.append(f"W={r['workers']} r={r['ratio']}: {r}")
    elif r["ratio"] != "auto" and abs(r["ratio_mean"] - r["ratio"]) > 1e-9:
        bad.append(f"W={r['workers']}: ratio_mean {r['ratio_mean']} != {r['ratio']}")
    elif r["ratio"] == "auto" and not 0 <= r["ratio_mean"] <= 1:
        bad.append(f"auto ratio_mean {r['ratio_mean']}")
print("\n".join(bad) or "ok")
PY
)
if [ "$check" = ok ]; then ok "conflux points W=0 r=0, W=1 r=0.5, auto, 1.0 measured"; else not_ok "conflux rows" "$check"; fi

torch_rows=$(grep -c '"pipeline": "pytorch"' "$OUT/rows.jsonl")
have_torch=0
for py in python3 /usr/bin/python3; do  # the benchmark's choice of PYTHON
  "$py" -c 'import torch, torchvision, PIL, h5py' 2>/dev/null && have_torch=1 && break
done
if [ "$have_torch" = 1 ]; then
  check=$(python3 - "$OUT/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = {r["workers"]: r for r in rows if r["pipeline"] == "pytorch"}
bad = [] if sorted(torch) == [0, 1] else [f"PyTorch worker counts {sorted(torch)}"]
for w, r in torch.items():
    if r["status"] != "ok" or not r["samples_per_s"] > 0 or r["steps"] < 2 \
            or r["data_wait_ms"] is None or not (r["cpu_cores"] or 0) > 0 \
            or r["reader"] != "pack (os.pread)":
        bad.append(f"W={w}: {r}")
print("\n".join(bad) or "ok")
PY
)
  if [ "$check" = ok ]; then ok "PyTorch rows for W=1 and W=0 measured from the pack"; else not_ok "PyTorch rows" "$check"; fi
else
  n_skip=$(grep '"pipeline": "pytorch"' "$OUT/rows.jsonl" | grep -c '"status": "skipped".*cannot import torch')
  if [ "$torch_rows" -eq 2 ] && [ "$n_skip" -eq 2 ]; then
    ok "PyTorch rows: skipped, saying why (no torch here)"
  else
    not_ok "PyTorch rows: $torch_rows rows, $n_skip skipped" "$(cat "$OUT/rows.jsonl")"
  fi
fi

md=$OUT/results.md
missing=()
for text in "| pipeline | W=0 | W=1 |" "| conflux r=W/(W+1) |" "| conflux r=1.0 |" "| conflux auto |" \
  "auto >= 95 % of the best fixed ratio at W=1" "DALI rows skipped: nvidia-dali-cuda130" \
  "the 500 CIFAR-10 records of $TMP/head.bin, repeated to 10000" "pack: 64 samples" \
  "SMOKE run: not a measurement"; do
  grep -qF -- "$text" "$md" || missing+=("$text")
done
if [ ${#missing[@]} -eq 0 ]; then ok "results.md: table, acceptance lines, data and DALI notes"; else not_ok "results.md lacks: ${missing[*]}" "$(cat "$md")"; fi
header=$(head -1 "$OUT/results.csv")
rows_csv=$(($(wc -l <"$OUT/results.csv") - 1))
rows_json=$(grep -c . "$OUT/rows.jsonl")
if [[ $header == model,pipeline,workers,ratio,status,samples_per_s* ]] && [ "$rows_csv" -eq "$rows_json" ]; then
  ok "results.csv: $rows_csv rows, one per point"
else
  not_ok "results.csv: header '$header', $rows_csv rows for $rows_json points"
fi
if [ ! -e "$OUT/work/pack" ] && ! ls "$OUT"/work/runs/*/checkpoints >/dev/null 2>&1; then
  ok "the data set and the runs' checkpoints are deleted at the end"
else
  not_ok "left behind: $(ls "$OUT/work" "$OUT"/work/runs/*)"
fi
cli_summary
