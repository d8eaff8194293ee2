#!/usr/bin/env bash
# Command-line tests of the cost model: `conflux profile` under Lambda-like limits writes a
# profile whose times fall with memory and grow with the batch; `conflux fit` fits it and
# writes a model; `conflux predict` and `conflux plan` use it (plan emits a config the loader
# accepts and an #SBATCH header); an input-bound job on an image folder gets a data worker, an
# offload ratio and a heterogeneous #SBATCH header, and its planned config runs; bad input gets
# clear errors with exit 2: negative and
# infeasible deadlines, an empty profile, a fit that cannot converge, out-of-range limits.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

if [ ! -d "$DATA/mnist" ]; then
  echo "skip - plan CLI tests: MNIST not found under $DATA"
  cli_summary
  exit
fi
CONFIG=configs/mnist_mlp.toml

# A small sweep: 2 trainer counts x 3 sizes x 2 batches, a fraction of a second per point.
out=$("${MPIRUN[@]}" -np 2 "$CONFLUX" profile --config "$CONFIG" --set run.dir=\""$TMP/p"\" \
  --workers 1,2 --memory 384,768,1536 --batch 16,128 --steps 10 --seconds 0.3 \
  --output "$TMP/profile.toml" 2>&1)
points=$(grep -c '^\[\[point\]\]' "$TMP/profile.toml" 2>/dev/null)
if [ "${points:-0}" -eq 12 ]; then ok "profile: 12 grid points measured"; else
  not_ok "profile: $points points (want 12)" "$out"; fi
# Throttled to 0.22 vCPU a batch takes about 4x as long as at 0.87 vCPU (2x is the bound: a
# loaded machine slows the fast point too); unthrottled both would take the same.
slow=$(grep -F 'W=1 M=384 MB (0.22 vCPU) B=128' <<<"$out" | sed -n 's/.*iteration \([0-9.]*\) ms.*/\1/p')
fast=$(grep -F 'W=1 M=1536 MB (0.87 vCPU) B=128' <<<"$out" | sed -n 's/.*iteration \([0-9.]*\) ms.*/\1/p')
if awk -v s="${slow:-0}" -v f="${fast:-1}" 'BEGIN { exit !(s > 2 * f) }'; then
  ok "profile: the CPU share throttles ($slow ms at 384 MB vs $fast ms at 1536 MB)"
else
  not_ok "profile: 384 MB took $slow ms, 1536 MB $fast ms (want > 2x; 4x without load)" "$out"
fi

if out=$("$CONFLUX" fit --profile "$TMP/profile.toml" --output "$TMP/model.toml" 2>&1) &&
  grep -q 'R^2' <<<"$out" && grep -q '^\[train\]' "$TMP/model.toml"; then
  ok "fit: model written with goodness of fit"
else
  not_ok "fit" "$out"
fi

out=$("$CONFLUX" predict --model "$TMP/model.toml" --config "$CONFIG" --set cluster.trainers=2 \
  --set limits.memory_mb=900 --set train.batch_size=96 2>&1)
if grep -q 'predicted epoch: [0-9.]* s (625 iterations' <<<"$out"; then
  ok "predict: epoch of 625 iterations (60000 / 96)"
else
  not_ok "predict" "$out"
fi

if out=$("$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 \
  --emit-config "$TMP/plan.toml" --emit-sbatch "$TMP/plan.sbatch" 2>&1) &&
  grep -q '^chosen:' <<<"$out" && grep -q 'exact search' <<<"$out" &&
  grep -q '^#SBATCH --ntasks=' "$TMP/plan.sbatch" &&
  grep -qP '^margin [0-9.]+ % \(90th percentile of the fit.s [0-9]+ held-out T_train errors\)' <<<"$out" &&
  grep -q '^\[validation\]' "$TMP/model.toml"; then
  ok "plan: a choice, alternatives, an #SBATCH header and the margin from the fit's held-out errors"
else
  not_ok "plan" "$out"
fi
# Its learning rate follows the planned global batch (linear scaling by default).
planned=$(grep -oP '^batch_size = \K[0-9]+' "$TMP/plan.toml")
planned_lr=$(grep -oP '^lr = \K[0-9.e-]+' "$TMP/plan.toml")
if [ -n "$planned" ] && python3 -c "import sys; sys.exit(0 if abs($planned_lr - 0.05 * $planned / 128) < 1e-9 else 1)" 2>/dev/null &&
  grep -q "^learning rate for the global batch $planned (config: 128): 0.05 -> " <<<"$out"; then
  ok "plan: the emitted learning rate is 0.05 x $planned / 128 (linear scaling), and said"
else
  not_ok "plan: emitted lr '$planned_lr' for batch '$planned'" "$out"
fi
# The emitted config is the user's config with the chosen keys set: ready to run.
if out=$("$CONFLUX" config check --config "$TMP/plan.toml" 2>&1) &&
  grep -q '^memory_mb = ' "$TMP/plan.toml" && grep -q '^strategy = ' "$TMP/plan.toml" &&
  grep -q "type = 'linear'" "$TMP/plan.toml"; then
  ok "plan: the emitted config is complete and passes config check"
else
  not_ok "plan: emitted config rejected" "$out"
fi

expect_fail "plan: negative deadline" 2 "deadline must be positive" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline -5
# The same deadline with --margin 0.5 plans within 3600 / 1.5 s, and says so.
out=$("$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --margin 0.5 2>&1)
if grep -q '^margin 50.0 % (--margin)' <<<"$out" && grep -q 'margin 50.0 % (predicted within 2400 s)' <<<"$out"; then
  ok "plan --margin 0.5: planned within 2400 s of the 3600 s deadline"
else
  not_ok "plan --margin 0.5" "$out"
fi
# FasDL's rules: a fixed aggregator batch and a global batch of at most 1024.
out=$("$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 \
  --aggregator-batch 32 --max-global-batch 1024 2>&1)
global=$(grep -oP '^  global batch \K[0-9]+' <<<"$out")
if grep -q '^batch rules: Ba = 32, global batch <= 1024' <<<"$out" && grep -q '^chosen: .*Ba = 32,' <<<"$out" &&
  [ -n "$global" ] && [ "$global" -le 1024 ]; then
  ok "plan with FasDL's batch rules: Ba = 32 and a global batch of $global <= 1024"
else
  not_ok "plan with batch rules" "$out"
fi
# --- planning for a target: a reference run with the gradient noise scale -------------------
# 2 trainers, 2 epochs of 12000 samples: about 2 s. Its epoch-2 test accuracy is the target.
"${MPIRUN[@]}" -np 2 "$CONFLUX" train --config "$CONFIG" --set data.train_limit=12000 \
  --set train.epochs=2 --set train.noise_scale=true --set run.dir=\""$TMP/ref"\" >"$TMP/ref.log" 2>&1
acc=$(python3 -c "import json; print(json.loads(open('$TMP/ref/metrics.jsonl').readlines()[-1])['test_accuracy'])" 2>/dev/null)
if [ -n "$acc" ] && grep -q 'gradient noise scale: B_noise [0-9.]* (tr(Sigma)' "$TMP/ref.log" &&
  grep -q '"noise_scale": [0-9]' "$TMP/ref/metrics.jsonl"; then
  ok "train.noise_scale: B_noise per epoch in the log and metrics.jsonl (test accuracy $acc)"
else
  not_ok "train.noise_scale" "$(cat "$TMP/ref.log")"
fi
# Measuring it leaves the weights alone: the same run without it has the same digest.
"${MPIRUN[@]}" -np 2 "$CONFLUX" train --config "$CONFIG" --set data.train_limit=12000 \
  --set train.epochs=2 --set run.dir=\""$TMP/ref-off"\" >"$TMP/ref-off.log" 2>&1
d_on=$(sed -n 's/^model digest: //p' "$TMP/ref.log")
d_off=$(sed -n 's/^model digest: //p' "$TMP/ref-off.log")
if [ -n "$d_on" ] && [ "$d_on" = "$d_off" ]; then
  ok "train.noise_scale leaves the weights alone: same digest with and without it"
else
  not_ok "train.noise_scale changed the digest: '$d_on' vs '$d_off'" "$(cat "$TMP/ref-off.log")"
fi
target=$(python3 -c "print(f'{$acc - 0.0005:.4f}')" 2>/dev/null)
# conflux prints the target in its shortest form (0.9440 as 0.944), as Python's float() does.
shown=$(python3 -c "print(float('$target'))" 2>/dev/null)
if out=$("$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 \
  --target slurm --target-accuracy "$target" --reference "$TMP/ref" --emit-config "$TMP/target.toml" 2>&1) &&
  grep -q "until test accuracy >= $shown, deadline" <<<"$out" &&
  grep -q "^statistical efficiency: steps to the target S(B) = S_min (1 + B_noise / B)" <<<"$out" &&
  grep -qP "global batch 128: (94|188) steps" <<<"$out" &&
  grep -qP '^rank +W +M MB +K +Ba +Bn +global +D +offload +iterations' <<<"$out" &&
  grep -q "^smaller and larger batches, to the target:" <<<"$out" &&
  grep -qP '^epochs for [0-9]+ steps of [0-9]+ samples to test accuracy >= ' <<<"$out" &&
  grep -qP '^epochs = [0-9]+' "$TMP/target.toml"; then
  ok "plan --target-accuracy $target --reference: steps to the target from B_noise, epochs emitted"
else
  not_ok "plan --target-accuracy" "$out"
fi
expect_fail "plan: a target without a reference run" 2 "need --reference RUN_DIR" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --target-accuracy 0.9
expect_fail "plan: a target above what the reference reached" 2 "never reached test accuracy >= 0.999 (best test accuracy" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --target-accuracy 0.999 --reference "$TMP/ref"
cp -r "$TMP/ref" "$TMP/ref-quiet" && sed -i 's/, "noise_steps".*}$/}/' "$TMP/ref-quiet/metrics.jsonl"
expect_fail "plan: a reference without noise-scale data" 2 "holds no gradient noise scale for epoch" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --target-loss 5 --reference "$TMP/ref-quiet"
expect_fail "plan: --epochs with a target" 2 "give one of them" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --epochs 3 --target-loss 0.2 --reference "$TMP/ref"

expect_fail "plan: a global batch cap below the smallest batch" 2 \
  "the global batch cap 8 is below the smallest batch a worker can take (16)" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --max-global-batch 8
expect_fail "plan: an unknown learning-rate rule" 2 "--lr-scaling must be linear, sqrt or none, not 'cubic'" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --lr-scaling cubic
expect_fail "plan: negative margin" 2 "--margin must be auto or a fraction >= 0 (e.g. 0.1), not '-0.1'" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --margin -0.1
expect_fail "plan: a margin that is not a number" 2 "not '10%'" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --margin 10%
expect_fail "plan: infeasible deadline names the fastest" 2 "no configuration meets" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 0.001
expect_fail "plan: slurm target beyond the measured trainers" 2 "the fastest is" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 0.001 --target slurm
printf 'config_name = "x"\ndataset = "mnist"\nepoch_samples = 100\ngradient_mb = 1.0\nmb_per_vcpu = 1769.0\n' \
  >"$TMP/empty.toml"
expect_fail "fit: empty profile" 2 "holds no measured point" -- \
  "$CONFLUX" fit --profile "$TMP/empty.toml" --output "$TMP/x.toml"
# Times that do not fall with memory: the sweep was not throttled.
{
  printf 'config_name = "x"\ndataset = "mnist"\nepoch_samples = 100\ngradient_mb = 1.0\nmb_per_vcpu = 1769.0\n'
  for m in 256 512 1024; do
    for b in 16 64; do
      printf '[[point]]\nworkers = 1\nmemory_mb = %d\nbatch = %d\nsteps = 5\niteration_s = %s\ncompute_s = 0.0\nsync_s = 0.0\ntransfer_s = 0.001\n' \
        "$m" "$b" "$(awk -v b="$b" 'BEGIN { print 0.0001 * b }')"
    done
  done
} >"$TMP/flat.toml"
expect_fail "fit: non-converging fit says why" 2 "did not converge" -- \
  "$CONFLUX" fit --profile "$TMP/flat.toml" --output "$TMP/x.toml"
expect_fail "predict: needs a function size" 2 "limits.memory_mb is 0" -- \
  "$CONFLUX" predict --model "$TMP/model.toml" --config "$CONFIG"
expect_fail "config: memory below Lambda's smallest size" 2 "limits.memory_mb = 64" -- \
  "$CONFLUX" config check --config "$CONFIG" --set limits.memory_mb=64
expect_fail "profile: trainer count above the ranks" 2 "--workers 3 is outside 1..1" -- \
  "${MPIRUN[@]}" -np 1 "$CONFLUX" profile --config "$CONFIG" --workers 3 --memory 512 --batch 16 \
  --output "$TMP/x.toml"

# --- Several BLAS thread counts: `conflux profile --threads 2` records the count per point; a
# 2-thread profile merged with the 1-thread one gives each count its own T_train; the plan
# chooses among the profiled counts and sets cluster.blas_threads. The fit's input is the
# 1-thread profile with its times x 1.05 as the 2-thread one (two threads on this machine's
# two shared vCPUs time too unsteadily for a fit in a test; benchmarks/plan_threads.sh measures).
out=$("${MPIRUN[@]}" -np 1 "$CONFLUX" profile --config "$CONFIG" --set run.dir=\""$TMP/p2"\" \
  --threads 2 --memory 768 --batch 16 --steps 5 --seconds 0.1 --output "$TMP/profile-2-measured.toml" 2>&1)
if [ "$(grep -c '^threads = 2$' "$TMP/profile-2-measured.toml" 2>/dev/null)" = 1 ] &&
  grep -q 'W=1 M=768 MB (0.43 vCPU) B=16 T=2: iteration' <<<"$out"; then
  ok "profile --threads 2: the point records its BLAS thread count"
else
  not_ok "profile --threads 2" "$out"
fi
python3 - "$TMP/profile.toml" "$TMP/profile-2.toml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = text.replace("threads = 1\n", "threads = 2\n")
text = re.sub(r"^(iteration_s|compute_s) = ([0-9.e+-]+)$",
              lambda m: f"{m.group(1)} = {float(m.group(2)) * 1.05!r}", text, flags=re.M)
open(sys.argv[2], "w").write(text)
PY
out=$("$CONFLUX" fit --profile "$TMP/profile.toml" --profile "$TMP/profile-2.toml" \
  --output "$TMP/model-threads.toml" 2>&1)
if grep -q '^T_train at 2 BLAS threads = ' <<<"$out" && grep -q '^train_threads = 1$' "$TMP/model-threads.toml" &&
  grep -q '^\[\[more_threads\]\]$' "$TMP/model-threads.toml"; then
  ok "fit: profiles at 1 and 2 BLAS threads give one T_train per thread count"
else
  not_ok "fit with two thread counts" "$out"
fi
out=$("$CONFLUX" plan --model "$TMP/model-threads.toml" --config "$CONFIG" --target slurm --max-workers 1 \
  --deadline 3600 --threads 2 --emit-config "$TMP/plan-threads.toml" 2>&1)
if grep -q '^  global batch .* 2 BLAS threads (cluster.blas_threads)$' <<<"$out" &&
  grep -q '^blas_threads = 2$' "$TMP/plan-threads.toml"; then
  ok "plan --threads 2: planned with the 2-thread fit, cluster.blas_threads = 2 emitted"
else
  not_ok "plan --threads 2" "$out"
fi
expect_fail "plan: a thread count that was not profiled" 2 "was profiled at 1, 2 BLAS thread(s), not 4" -- \
  "$CONFLUX" plan --model "$TMP/model-threads.toml" --config "$CONFIG" --target slurm --deadline 3600 \
  --max-workers 1 --threads 4
expect_fail "predict: a thread count that was not profiled" 2 "cluster.blas_threads = 4, but" -- \
  "$CONFLUX" predict --model "$TMP/model-threads.toml" --config "$CONFIG" --set cluster.blas_threads=4 \
  --set limits.memory_mb=900

# --- Where preprocessing runs: an input-bound job (JPEGs of 200-500 px decoded to 32 px, a
# tiny model) gets data workers when the trainer alone cannot meet the deadline ------------------
if [ -d "$DATA/cifar-10" ]; then
  "${CONFLUX_BIN:-build/bin}/conflux-bench" make-images --data "$DATA" --out "$TMP/folder" \
    --train 512 --val 32 --size 200-500 >"$TMP/make.log" 2>&1 || { cat "$TMP/make.log"; exit 3; }
  # The shipped input-bound config on a small generated folder, batch 16, training only.
  input=(--config configs/imagefolder_input_bound.toml --set data.path=\""$TMP/folder"\"
    --set train.batch_size=16 --set train.eval=false)
  out=$("${MPIRUN[@]}" -np 1 "$CONFLUX" profile "${input[@]}" \
    --set run.dir=\""$TMP/pi"\" --workers 1 --memory 442,884,1769 --batch 8,16 --steps 5 \
    --seconds 0.3 --output "$TMP/input-profile.toml" 2>&1)
  builds=$(grep -c '^\[\[build\]\]' "$TMP/input-profile.toml" 2>/dev/null)
  fit=$("$CONFLUX" fit --profile "$TMP/input-profile.toml" --output "$TMP/input-model.toml" 2>&1)
  if [ "${builds:-0}" -eq 2 ] && grep -q '^P(B) (one batch on one preprocessing thread)' <<<"$fit" &&
    grep -q '^\[input\]' "$TMP/input-model.toml"; then
    ok "profile and fit of an input-bound job: batch-build times, T_c and P(B)"
  else
    not_ok "input-bound profile/fit: $builds builds" "$out $fit"
  fi
  # --margin 0: this test is about the data workers, not the noise of a CI machine's fit.
  space=(--model "$TMP/input-model.toml" "${input[@]}" --target slurm --epochs 1 --margin 0
    --max-workers 1 --batches 16 --min-memory 442 --max-memory 1769)
  alone=$("$CONFLUX" plan "${space[@]}" --deadline 1000 --max-data-workers 0 2>&1)
  rate=$(sed -n 's/^  throughput: \([0-9]*\) samples\/s$/\1/p' <<<"$alone")
  alone_s=$(awk -v r="${rate:-1}" 'BEGIN { printf "%.3f", 512 / r }')  # one epoch of 512
  deadline=$(awk -v t="$alone_s" 'BEGIN { printf "%.3f", 0.7 * t }')
  out=$("$CONFLUX" plan "${space[@]}" --deadline "$deadline" --max-data-workers 1 \
    --emit-config "$TMP/input-plan.toml" --emit-sbatch "$TMP/input-plan.sbatch" 2>&1)
  ratio=$(sed -n 's/^offload_ratio = \([0-9.]*\)$/\1/p' "$TMP/input-plan.toml")
  if grep -q '^chosen: .*, 1 data worker$' <<<"$out" && grep -q '^  input: 1 data worker x 1 thread build' <<<"$out" &&
    grep -q '^workers = 1$' "$TMP/input-plan.toml" && grep -q "^ranks = 'trainers'$" "$TMP/input-plan.toml" &&
    awk -v r="${ratio:-0}" 'BEGIN { exit !(r > 0.2 && r <= 1) }' &&
    grep -q '^#SBATCH hetjob$' "$TMP/input-plan.sbatch"; then
    ok "plan: the trainer alone needs $alone_s s > deadline $deadline s: 1 data worker, offload ratio $ratio, heterogeneous #SBATCH header"
  else
    not_ok "input-bound plan (alone: $alone_s s, deadline $deadline s)" "$alone $out $(cat "$TMP/input-plan.toml" 2>&1)"
  fi
  out=$("$CONFLUX" predict --model "$TMP/input-model.toml" --config "$TMP/input-plan.toml" 2>&1)
  if grep -qP '^with 1 data worker\(s\) at offload ratio 0\.\d{3}: predicted epoch' <<<"$out"; then
    ok "predict: the planned config's data worker and ratio"
  else
    not_ok "predict with a data worker" "$out"
  fi
  log=$("${MPIRUN[@]}" -np 2 "$CONFLUX" train --config "$TMP/input-plan.toml" \
    --set run.dir=\""$TMP/input-run"\" 2>&1)
  if grep -qP 'trainer 0: batches \d+ local, [1-9]\d* from workers' <<<"$log"; then
    ok "the planned config runs: 1 trainer and 1 data worker serving batches"
  else
    not_ok "the planned input-bound config" "$log"
  fi
  expect_fail "plan: data workers on the Lambda target" 2 "planned on the SLURM target only" -- \
    "$CONFLUX" plan --model "$TMP/input-model.toml" "${input[@]}" --deadline 100 \
    --max-data-workers 2
fi
# A model of an older conflux fit: no [compute] and [input] tables.
awk '/^\[(compute|input)\]$/ { skip = 1; next } /^\[/ { skip = 0 } !skip' "$TMP/model.toml" >"$TMP/old-model.toml"
expect_fail "plan: a negative number of data workers" 2 "--max-data-workers must be >= 0, got -5" -- \
  "$CONFLUX" plan --model "$TMP/model.toml" --config "$CONFIG" --deadline 3600 --target slurm \
  --max-data-workers -5
expect_fail "plan: data workers with a model that has no build times" 2 "has no input-pipeline cost" -- \
  "$CONFLUX" plan --model "$TMP/old-model.toml" --config "$CONFIG" --deadline 3600 --target slurm \
  --max-data-workers 2 --max-workers 1

# --- GPU trainers: data workers per GPU from a model of a GPU trainer. The rates are synthetic
# (this machine has no GPU): ceiling 2000 samples/s at batch 128, the trainer's own input 100
# samples/s, one data-worker thread 300 samples/s (p1 = 1 / 300) ---------------------------------
if grep -q "^device = 'cpu'$" "$TMP/profile.toml"; then
  ok "profile: records that its trainers computed on the CPU"
else
  not_ok "profile: no device = 'cpu'" "$(head -12 "$TMP/profile.toml")"
fi
cat >"$TMP/gpu-model.toml" <<'TOML'
dataset = "mnist"
epoch_samples = 60000
gradient_mb = 0.4
mb_per_vcpu = 1769
[input]
p0 = 0.0
p1 = 0.0033333333333333335
[[gpu]]
batch = 128
ceiling_samples_s = 2000.0
local_samples_s = 100.0
TOML
gpu=(--model "$TMP/gpu-model.toml" --config "$CONFIG" --target slurm --epochs 10 --margin 0)
out=$("$CONFLUX" plan "${gpu[@]}" --deadline 600 --emit-config "$TMP/gpu-plan.toml" \
  --emit-sbatch "$TMP/gpu-plan.sbatch" 2>&1)
# 6 workers feed 100 + 6 x 300 = 1900 < 2000 samples/s; 7 feed the GPU; 8 only cost more.
if grep -q '^chosen: 1 GPU trainer, batch 128 per GPU, 7 data workers$' <<<"$out" &&
  grep -q '^  throughput: 2000 samples/s (GPU-bound)$' <<<"$out" &&
  grep -qP '^ +6 +6 +1900  input-bound ' <<<"$out" && grep -qP '^ +8 +8 +2000 +GPU-bound ' <<<"$out" &&
  grep -q "^device = 'gpu'$" "$TMP/gpu-plan.toml" && grep -q '^workers = 7$' "$TMP/gpu-plan.toml" &&
  grep -q '^memory_mb = 0$' "$TMP/gpu-plan.toml" && grep -q '^#SBATCH --gpus-per-task=1$' "$TMP/gpu-plan.sbatch"; then
  ok "plan of a GPU trainer: 7 data workers feed its 2000 samples/s, config with train.device = gpu"
else
  not_ok "plan of a GPU trainer" "$out $(cat "$TMP/gpu-plan.toml" "$TMP/gpu-plan.sbatch" 2>&1)"
fi
if "$CONFLUX" config check --config "$TMP/gpu-plan.toml" >/dev/null 2>&1; then
  ok "the planned GPU config loads"
else
  not_ok "the planned GPU config does not load" "$("$CONFLUX" config check --config "$TMP/gpu-plan.toml" 2>&1)"
fi
expect_fail "plan: a deadline below what the GPU can reach" 2 \
  "no configuration meets 200 s; the fastest is 300 s with 1 GPU trainer, batch 128 per GPU, 7 data workers" -- \
  "$CONFLUX" plan "${gpu[@]}" --deadline 200
expect_fail "plan: GPU trainers on the Lambda target" 2 "describes GPU trainers: they are planned on the SLURM target" -- \
  "$CONFLUX" plan --model "$TMP/gpu-model.toml" --config "$CONFIG" --deadline 600

cli_summary
