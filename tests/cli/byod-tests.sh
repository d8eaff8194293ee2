#!/usr/bin/env bash
# Command-line tests of "bring your own data" (docs/datasets.md) on test images made from the
# real CIFAR-10 by `conflux-bench make-images`:
#   - one tiny CNN trains to the same digest from an image folder, from its pack and from the
#     HDF5 arrays of the same decoded pixels (make-images --hdf5-arrays), audited;
#   - offload ratios 0, 0.5, 1 with 1 and 3 workers give that digest; 2 trainers match 1
#     trainer within float tolerance (as tests/mpi/training_test.cpp holds for built-in data);
#   - images of any size (PNG with alpha, grayscale JPEG) train with transform.resized_crop;
#   - a dataset 4x larger than the job's memory cap (a memory cgroup) streams to the end;
#   - kill -9 mid-epoch, then --resume auto: the uninterrupted digest; resumed on 2 trainers:
#     the audit passes;
#   - bad input is exit 2 naming the file (or key); data.on_corrupt = "skip" skips and audits.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
suite_start=$SECONDS

if [ ! -d "$DATA/cifar-10" ]; then
  echo "skip - bring-your-own-data CLI tests: CIFAR-10 not found under $DATA"
  cli_summary
  exit
fi

# --- the data ----------------------------------------------------------------------------------
# fixed: 32x32 JPEGs and their decoded pixels as HDF5 arrays; var: 40-120 px, every 5th a PNG
# (every other one RGBA), every 7th (not PNG) a grayscale JPEG.
make_images() {  # make_images DIR OPTION...
  "$BENCH" make-images --data "$DATA" --out "$@" >"$TMP/make-$(basename "$1").log" 2>&1 ||
    { echo "make-images $* failed:"; cat "$TMP/make-$(basename "$1").log"; exit 3; }
}
make_images "$TMP/fixed" --train 600 --val 100 --size 0 --hdf5-arrays "$TMP/fixed.h5"
make_images "$TMP/var" --train 300 --val 100 --size 40-120 --png-every 5 --gray-every 7
make_images "$TMP/damaged" --train 10 --val 0 --damaged
"$CONFLUX" data pack --dataset image-folder --path "$TMP/fixed" --out "$TMP/fixed-pack" >"$TMP/pack.log" 2>&1 ||
  { cat "$TMP/pack.log"; exit 3; }

cat >"$TMP/byod.toml" <<EOF
[run]
name = "byod"
seed = 7
[cluster]
trainers = 1
[data]
dataset = "image-folder"
path = "$TMP/fixed"
channels = 3
[transform]
resized_crop = 32
hflip = true
[[model.layers]]
type = "conv2d"
out = 8
kernel = 3
padding = 1
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool"
kernel = 4
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = 10
[train]
epochs = 2
batch_size = 32
lr = 0.05
log_every = 0
EOF

byod_run() {  # byod_run RANKS NAME [--set ...]...: run directory $TMP/run-NAME
  "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config "$TMP/byod.toml" --set "run.dir=$TMP/run-$2" "${@:3}"
}
byod_train() { byod_run "$@" >"$TMP/$2.log" 2>&1; }  # the same, output in $TMP/NAME.log
# audited LOG N [EPOCHS]: every epoch audited, each of the N samples used exactly once.
audited() { [ "$(grep -c "audit: all $2 samples used exactly once" "$1")" -eq "${3:-2}" ]; }
served() { grep -oP 'worker \d+: served \K[0-9]+' "$1" | awk '{ s += $1 } END { print s + 0 }'; }

# --- the same digest from the folder, its pack and the HDF5 arrays -----------------------------
byod_train 1 folder --set data.audit=true
base=$(digest_of "$TMP/folder.log")
byod_train 1 pack --set data.audit=true --set data.dataset=packed --set "data.path=$TMP/fixed-pack"
byod_train 1 arrays --set data.audit=true --set data.dataset=hdf5-arrays --set "data.path=$TMP/fixed.h5"
if [ -n "$base" ] && [ "$(digest_of "$TMP/pack.log")" = "$base" ] && [ "$(digest_of "$TMP/arrays.log")" = "$base" ] &&
  audited "$TMP/folder.log" 600 && audited "$TMP/pack.log" 600 && audited "$TMP/arrays.log" 600; then
  ok "image folder, its pack and its HDF5 arrays: the same digest ($base), audits pass"
else
  not_ok "folder '$base', pack '$(digest_of "$TMP/pack.log")', arrays '$(digest_of "$TMP/arrays.log")'" \
    "$(cat "$TMP/folder.log" "$TMP/pack.log" "$TMP/arrays.log")"
fi

# --- the data service: offload ratios and worker counts never change the model -----------------
for ranks in 2 4; do
  for ratio in 0 0.5 1; do
    [ "$ranks" = 4 ] && [ "$ratio" = 0 ] && continue
    name="np$ranks-r$ratio"
    byod_train "$ranks" "$name" --set data.audit=true --set "data.offload_ratio=$ratio"
    rc=$?
    s=$(served "$TMP/$name.log")
    if [ "$ratio" = 0 ]; then want=0; else want=1; fi
    if [ "$rc" -eq 0 ] && [ "$(digest_of "$TMP/$name.log")" = "$base" ] && audited "$TMP/$name.log" 600 &&
      [ "$((s > 0 ? 1 : 0))" -eq "$want" ]; then
      ok "1 trainer + $((ranks - 1)) worker(s), offload ratio $ratio: same digest, audit passes, workers served $s batches"
    else
      not_ok "$((ranks - 1)) worker(s), ratio $ratio: rc $rc digest '$(digest_of "$TMP/$name.log")' (want '$base'), served $s" \
        "$(cat "$TMP/$name.log")"
    fi
  done
done
byod_train 2 pack-r1 --set data.dataset=packed --set "data.path=$TMP/fixed-pack" --set data.offload_ratio=1
byod_train 2 arrays-r1 --set data.dataset=hdf5-arrays --set "data.path=$TMP/fixed.h5" --set data.offload_ratio=1
if [ "$(digest_of "$TMP/pack-r1.log")" = "$base" ] && [ "$(digest_of "$TMP/arrays-r1.log")" = "$base" ] &&
  [ "$(served "$TMP/pack-r1.log")" -gt 0 ] && [ "$(served "$TMP/arrays-r1.log")" -gt 0 ]; then
  ok "pack and HDF5 arrays built by a worker (offload ratio 1): same digest"
else
  not_ok "pack/arrays on a worker: '$(digest_of "$TMP/pack-r1.log")' '$(digest_of "$TMP/arrays-r1.log")' (want '$base')" \
    "$(cat "$TMP/pack-r1.log" "$TMP/arrays-r1.log")"
fi

# --- auto, worker timeouts and the timeline on decoding-heavy images ---------------------------
# 200-500 px JPEGs cropped to 32 px: decoding dwarfs the small CNN, so the job is input-bound.
make_images "$TMP/heavy" --train 320 --val 32 --size 200-500
heavy=(--set "data.path=$TMP/heavy" --set train.epochs=3 --set data.audit=true)
byod_train 1 heavy-r0 "${heavy[@]}"
byod_train 3 heavy-auto "${heavy[@]}" --set 'data.offload_ratio="auto"' --set profile.initial_steps=2 \
  --set profile.steps=4
auto_ratio=$(grep -oP 'offload: trainer 0 at step \d+: ratio 0.00 -> \K[0-9.]+(?=: start-up profile over 4 steps: input-bound)' "$TMP/heavy-auto.log")
workers_built=$(python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))
events = t['traceEvents'] if isinstance(t, dict) else t
print(sum(1 for e in events if e.get('name') == 'build batch' and e.get('pid') in (1, 2)))" \
  "$TMP/run-heavy-auto/timeline.json" 2>/dev/null)
if [ -n "$(digest_of "$TMP/heavy-r0.log")" ] && [ "$(digest_of "$TMP/heavy-auto.log")" = "$(digest_of "$TMP/heavy-r0.log")" ] &&
  audited "$TMP/heavy-auto.log" 320 3 && [ -n "$auto_ratio" ] && [ "$(served "$TMP/heavy-auto.log")" -gt 0 ] &&
  [ "${workers_built:-0}" -gt 0 ]; then
  ok "offload ratio auto on an image folder: input-bound, ratio 0 -> $auto_ratio, workers served $(served "$TMP/heavy-auto.log") batches ($workers_built 'build batch' events of ranks 1-2 in timeline.json), same digest as ratio 0, audit passes"
else
  not_ok "auto on an image folder: ratio '$auto_ratio', served $(served "$TMP/heavy-auto.log"), timeline '$workers_built'" \
    "$(cat "$TMP/heavy-r0.log" "$TMP/heavy-auto.log")"
fi
# Worker 0 answers its first 2 requests, then holds every answer for 2 s; the deadline is 0.3 s.
byod_train 3 heavy-slow "${heavy[@]}" --set data.offload_ratio=1 --set fault.worker=0 \
  --set fault.mode=delay --set fault.delay_s=2 --set fault.after=2 --set data.worker_timeout_s=0.3
if [ "$(digest_of "$TMP/heavy-slow.log")" = "$(digest_of "$TMP/heavy-r0.log")" ] && audited "$TMP/heavy-slow.log" 320 3 &&
  grep -q 'worker 0 (rank 1) did not answer the request' "$TMP/heavy-slow.log" &&
  grep -qP ', [1-9][0-9]* rebuilt after a worker timeout' "$TMP/heavy-slow.log"; then
  ok "image folder, a worker slower than data.worker_timeout_s: the trainer rebuilds its batches, same digest, audit passes"
else
  not_ok "image folder with a slow worker" "$(cat "$TMP/heavy-slow.log")"
fi

# 2 trainers x 16 vs 1 trainer x 32: only the order of float additions differs, so the weights
# agree within float tolerance (tests/mpi/training_test.cpp: max |diff| < 1e-4), not bit for bit;
# 2 trainers with and without a worker agree exactly.
byod_train 2 t2 --set cluster.trainers=2 --set data.audit=true
byod_train 3 t2-w1 --set cluster.trainers=2 --set data.offload_ratio=1
if [ -n "$(digest_of "$TMP/t2.log")" ] && audited "$TMP/t2.log" 600 &&
  h5diff -d 1e-4 "$TMP/run-folder/model.h5" "$TMP/run-t2/model.h5" /params /params >"$TMP/h5diff.log" 2>&1 &&
  [ "$(digest_of "$TMP/t2-w1.log")" = "$(digest_of "$TMP/t2.log")" ]; then
  ok "2 trainers: weights within 1e-4 of 1 trainer's, audit passes; with a worker at ratio 1: bit-identical"
else
  not_ok "2 trainers: digest '$(digest_of "$TMP/t2.log")', with worker '$(digest_of "$TMP/t2-w1.log")'" \
    "$(cat "$TMP/h5diff.log" "$TMP/t2.log")"
fi

# --- images of any size: PNG with alpha, grayscale JPEG, 40-120 px ----------------------------
byod_train 1 var --set "data.path=$TMP/var" --set data.audit=true
byod_train 2 var-r1 --set "data.path=$TMP/var" --set data.offload_ratio=1
pngs=$(find "$TMP/var" -name '*.png' | wc -l)
grays=$(grep -oP '^train\s+\d+\s+\d+\s+\K\d+' "$TMP/make-var.log")
if [ -n "$(digest_of "$TMP/var.log")" ] && audited "$TMP/var.log" 300 && [ "$pngs" -gt 0 ] && [ "${grays:-0}" -gt 0 ] &&
  [ "$(digest_of "$TMP/var-r1.log")" = "$(digest_of "$TMP/var.log")" ]; then
  ok "variable sizes ($pngs PNG half RGBA, $grays gray JPEG, 40-120 px): trains, audit passes; same digest decoded on a worker"
else
  not_ok "variable-size folder: '$(digest_of "$TMP/var.log")' vs worker '$(digest_of "$TMP/var-r1.log")'" \
    "$(cat "$TMP/var.log" "$TMP/var-r1.log")"
fi

# --- larger than the memory cap ------------------------------------------------------------------
# The job (mpirun and its one rank) runs in a memory cgroup capped at 96 MiB (RSS and page
# cache together; the kernel reclaims the cache and OOM-kills past it); the dataset is > 4x
# that: 1200 32x32 JPEGs, each padded after its end-of-image marker to ~340 KB (the decoder
# ignores what follows EOI; conflux still reads every byte of every file). RLIMIT_DATA is no
# such cap: it counts reserved address space (thread stacks, malloc arenas, MPI), so a run with
# a 42 MiB peak RSS needs about 200-500 MiB of it.
CAP_MB=96
cgroup=""
for root in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [ -w "$root" ] && mkdir "$root/conflux-byod-$$" 2>/dev/null; then
    cgroup=$root/conflux-byod-$$
    if [ -f "$cgroup/memory.limit_in_bytes" ]; then
      echo $((CAP_MB << 20)) >"$cgroup/memory.limit_in_bytes" && echo 0 >"$cgroup/memory.swappiness" 2>/dev/null
    elif [ -f "$cgroup/memory.max" ]; then
      echo $((CAP_MB << 20)) >"$cgroup/memory.max" && echo 0 >"$cgroup/memory.swap.max" 2>/dev/null
    else
      rmdir "$cgroup"
      cgroup=""
      continue
    fi
    break
  fi
done
if [ -z "$cgroup" ]; then
  echo "skip - larger than the memory cap: no writable memory cgroup here"
else
  make_images "$TMP/big" --train 1200 --val 100 --size 0
  python3 - "$TMP/big/train" <<'EOF'
import pathlib, sys
pad = bytes(340000)
for f in pathlib.Path(sys.argv[1]).glob("*/*.jpg"):
    with open(f, "ab") as out:
        out.write(pad)
EOF
  data_mb=$(du -sm "$TMP/big/train" | cut -f1)
  timeout 120 bash -c 'echo $$ >"$1/cgroup.procs" && exec "${@:2}"' _ "$cgroup" \
    "${MPIRUN[@]:2}" -np 1 "$CONFLUX" train --config "$TMP/byod.toml" --set "run.dir=$TMP/run-big" \
    --set "data.path=$TMP/big" --set train.epochs=1 --set train.batch_size=64 --set train.eval=false \
    --set data.cache_mb=1 --set data.audit=true >"$TMP/big.log" 2>&1
  rc=$?
  peak=$(grep -oP 'trainer 0: memory: peak RSS \K[0-9.]+' "$TMP/big.log")
  ahead=$(grep -oP 'read-ahead peak \K[0-9.]+' "$TMP/big.log")
  read_mb=$(grep -oP ', \K[0-9.]+(?= MiB read;)' "$TMP/big.log")
  oom=$(grep -oP 'oom_kill \K[0-9]+' "$cgroup/memory.oom_control" "$cgroup/memory.events" 2>/dev/null | head -1)
  rmdir "$cgroup" 2>/dev/null
  if [ "$rc" -eq 0 ] && [ "$data_mb" -ge $((4 * CAP_MB)) ] && audited "$TMP/big.log" 1200 1 && [ -n "$peak" ] &&
    python3 -c "import sys; sys.exit(0 if $peak < $CAP_MB and ${ahead:-99} <= 1.5 and ${read_mb:-0} >= 0.95 * $data_mb else 1)"; then
    ok "dataset $data_mb MB > 4 x the job's $CAP_MB MiB memory cap: trained, audit passes; peak RSS $peak MiB, read-ahead peak $ahead MiB (data.cache_mb = 1), $read_mb MiB read"
  else
    not_ok "larger than the memory cap: rc $rc, dataset $data_mb MB, peak RSS '$peak' MiB, read-ahead '$ahead' MiB, read '$read_mb' MiB, OOM kills '${oom:-?}'" \
      "$(cat "$TMP/big.log")"
  fi
  rm -rf "$TMP/big"
fi

# --- kill -9 mid-epoch, resume --------------------------------------------------------------------
# 1 trainer + 1 worker building every batch 30x slower (fault injection changes only the timing),
# a checkpoint every 2 steps; the trainer is killed once its first checkpoint exists.
KILL=(--set "data.path=$TMP/var" --set data.audit=true --set checkpoint.every_steps=2)
byod_train 2 kill-ref "${KILL[@]}"
ref=$(digest_of "$TMP/kill-ref.log")
"${MPIRUN[@]}" -np 2 "$CONFLUX" train --config "$TMP/byod.toml" --set "run.dir=$TMP/run-kill" "${KILL[@]}" \
  --set data.offload_ratio=1 --set fault.worker=0 --set fault.mode=slow --set fault.factor=30 \
  >"$TMP/kill.log" 2>&1 &
job=$!
killed=""
for _ in $(seq 1 600); do
  if compgen -G "$TMP/run-kill/checkpoints/ckpt-*.h5" >/dev/null; then
    pid=$(grep -oP '^\[conflux r0 [^]]*\] trainer 0/1 \(host \S+, pid \K[0-9]+' "$TMP/kill.log")
    [ -n "$pid" ] && kill -9 "$pid" && killed=$pid
    break
  fi
  kill -0 "$job" 2>/dev/null || break
  sleep 0.05
done
wait "$job"
kill_rc=$?
cp -a "$TMP/run-kill" "$TMP/run-kill2"
byod_train 2 resume "${KILL[@]}" --set "run.dir=$TMP/run-kill" --resume auto
at=$(grep -oP '^\[conflux r0 [^]]*\] resuming from \S+: \Kepoch \d+ step \d+' "$TMP/resume.log")
step=$(grep -oP 'step \K\d+' <<<"$at")
if [ -n "$killed" ] && [ "$kill_rc" -ne 0 ] && [ -n "$at" ] && [ "${step:-0}" -gt 0 ] && [ "${step:-99}" -lt 10 ] &&
  [ -n "$ref" ] && [ "$(digest_of "$TMP/resume.log")" = "$ref" ] && ! grep -q 'epoch 1/2 done' "$TMP/kill.log"; then
  ok "kill -9 of the trainer mid-epoch (mpirun exit $kill_rc), --resume auto from $at: the uninterrupted digest"
else
  not_ok "kill and resume: killed '$killed', mpirun exit $kill_rc, resumed from '$at', digest '$(digest_of "$TMP/resume.log")' (want '$ref')" \
    "$(cat "$TMP/kill.log" "$TMP/resume.log")"
fi
# The same checkpoint resumed on 2 trainers and 1 worker: each remaining sample once.
byod_train 3 resume-t2 "${KILL[@]}" --set "run.dir=$TMP/run-kill2" --resume auto --set cluster.trainers=2 \
  --set data.offload_ratio=0.5
if grep -q 'resuming from' "$TMP/resume-t2.log" && grep -q 'trainer 1/2' "$TMP/resume-t2.log" &&
  audited "$TMP/resume-t2.log" 300 && [ -n "$(digest_of "$TMP/resume-t2.log")" ]; then
  ok "the killed 1-trainer run resumed on 2 trainers + 1 worker: both epochs audited, every sample exactly once"
else
  not_ok "resume on 2 trainers" "$(cat "$TMP/resume-t2.log")"
fi

# --- corrupt samples ----------------------------------------------------------------------------
mapfile -t damaged < <(sed -n 's/^damaged: //p' "$TMP/make-damaged.log")
kinds=("truncated JPEG" "text file named .jpg" "zero-byte .jpg")
for k in 0 1 2; do
  dir=$TMP/bad$k
  cp -al "$TMP/fixed" "$dir"
  rel=${damaged[$k]#"$TMP/damaged/"}
  cp "${damaged[$k]}" "$dir/$rel"
  expect_fail "${kinds[$k]} with on_corrupt = error: exit 2 naming the file" 2 "$dir/$rel" -- \
    byod_run 1 "bad$k" --set "data.path=$dir" --set train.epochs=1
done
cp -al "$TMP/fixed" "$TMP/bad-all"
for k in 0 1 2; do cp "${damaged[$k]}" "$TMP/bad-all/${damaged[$k]#"$TMP/damaged/"}"; done
byod_train 2 skip --set "data.path=$TMP/bad-all" --set data.on_corrupt=skip --set data.audit=true \
  --set data.offload_ratio=0.5
rc=$?
named=0
for k in 0 1 2; do grep -q "skipping sample [0-9]* .*${damaged[$k]#"$TMP/damaged/"}" "$TMP/skip.log" && named=$((named + 1)); done
skipped=$(grep -oP '\d+(?= sample\(s\) skipped as corrupt)' "$TMP/skip.log" | awk '{ s += $1 } END { print s + 0 }')
if [ "$rc" -eq 0 ] && [ "$named" -eq 3 ] && [ "$skipped" -eq 6 ] &&
  [ "$(grep -c 'every sample used or skipped exactly once; 3 skipped as corrupt' "$TMP/skip.log")" -eq 2 ]; then
  ok "on_corrupt = skip: exit 0, the 3 damaged files named, 3 skipped per epoch (2 epochs), audit passes"
else
  not_ok "on_corrupt = skip: rc $rc, $named of 3 named, $skipped skipped (want 6)" "$(cat "$TMP/skip.log")"
fi

# --- bad folders, packs, arrays, keys -------------------------------------------------------------
cp -al "$TMP/fixed" "$TMP/emptyclass"
mkdir "$TMP/emptyclass/train/zebra"
expect_fail "an empty class folder: exit 2 naming it" 2 "$TMP/emptyclass/train/zebra: class folder without images" -- \
  byod_run 1 emptyclass --set "data.path=$TMP/emptyclass"
mkdir -p "$TMP/noimages/train/cat" "$TMP/noimages/val/cat"
echo "not an image" >"$TMP/noimages/train/cat/notes.txt"
expect_fail "a folder with no images: exit 2 naming it" 2 "$TMP/noimages/train" -- \
  byod_run 1 noimages --set "data.path=$TMP/noimages"
cp -r "$TMP/fixed-pack" "$TMP/cut-pack"
shard=$(find "$TMP/cut-pack" -name 'train-*.h5' | head -1)
truncate -s -1000 "$shard"
expect_fail "a pack with a truncated shard: exit 2 naming the shard" 2 "$shard" -- \
  byod_run 1 cutpack --set data.dataset=packed --set "data.path=$TMP/cut-pack"
byod_train 1 labels --set data.dataset=hdf5-arrays --set "data.path=$TMP/fixed.h5" --set data.num_classes=5
rc=$?
msg=$(grep -m1 'error:' "$TMP/labels.log")
if [ "$rc" -eq 2 ] && grep -qF "$TMP/fixed.h5" <<<"$msg" && grep -q '/train/labels' <<<"$msg" &&
  grep -qP '(index|sample|\[)\s*\d+' <<<"$msg"; then
  ok "HDF5 arrays with labels >= data.num_classes = 5: exit 2 naming file, dataset and index"
else
  not_ok "labels out of range: exit $rc (want 2)" "$(cat "$TMP/labels.log")"
fi
expect_fail "image-folder without data.path: exit 2 naming the key" 2 "data.path" -- \
  byod_run 1 nopath --set 'data.path=""'

# --- conflux config check ---------------------------------------------------------------------
# config check prints the resolved config (not a model summary); it sizes the model from the
# folder's index, which the model-memory bound's message shows (5354 parameters for 3x32x32).
out=$("$CONFLUX" config check --config "$TMP/byod.toml" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q "dataset = 'image-folder'" <<<"$out" && [ "$(grep -c '^\[\[model.layers\]\]' <<<"$out")" -eq 5 ]; then
  ok "config check on an image-folder config: exit 0, the resolved config with its 5 layers"
else
  not_ok "config check: exit $rc" "$out"
fi
expect_fail "config check sizes the model from the folder (5354 parameters)" 2 "5354 parameters" -- \
  "$CONFLUX" config check --config "$TMP/byod.toml" --set train.max_model_memory_mb=1 --set train.batch_size=100000
expect_fail "config check opens the folder: a missing data.path is exit 2 naming it" 2 "$TMP/none: no such directory" -- \
  "$CONFLUX" config check --config "$TMP/byod.toml" --set "data.path=$TMP/none"
expect_fail "images of any size without transform.resized_crop: exit 2 naming the key" 2 "transform.resized_crop" -- \
  "$CONFLUX" config check --config "$TMP/byod.toml" --set "data.path=$TMP/var" --set transform.resized_crop=0

echo "byod suite: $((SECONDS - suite_start)) s"
# --- the shipped example config -----------------------------------------------------------------
# configs/imagefolder_cnn.toml on the variable-size folder: 1 trainer + 1 worker, one short epoch.
out=$("${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/imagefolder_cnn.toml \
  --set data.path="$TMP/var" --set run.dir="$TMP/runs/shipped" --set train.epochs=1 \
  --set train.batch_size=64 --set data.audit=true 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q "audit: all 300 samples used exactly once" <<<"$out" &&
  grep -q "worker 0: memory: peak RSS" <<<"$out"; then
  ok "configs/imagefolder_cnn.toml trains on an image folder with a worker, audited"
else
  not_ok "configs/imagefolder_cnn.toml: exit $rc" "$out"
fi

# configs/imagefolder_resnet18.toml (blocks, padded max pool): config check at full size
# resolves its 68 layers (4 stem, 2 x 7 in stage 1, 3 x (9 + 7) in stages 2-4, pool, linear);
# shrunk to 32 px crops, 48 samples, batch 8 and one epoch, it trains with a worker to a digest.
out=$("$CONFLUX" config check --config configs/imagefolder_resnet18.toml --set data.path="$TMP/var" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c '^\[\[model.layers\]\]' <<<"$out")" -eq 68 ]; then
  ok "config check on configs/imagefolder_resnet18.toml: exit 0, 68 layers"
else
  not_ok "config check on configs/imagefolder_resnet18.toml: exit $rc" "$out"
fi
out=$("${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/imagefolder_resnet18.toml \
  --set data.path="$TMP/var" --set run.dir="$TMP/runs/resnet18" --set transform.resized_crop=32 \
  --set data.train_limit=48 --set data.test_limit=16 --set train.batch_size=8 \
  --set train.epochs=1 --set data.audit=true 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q "audit: all 48 samples used exactly once" <<<"$out" && [ -n "$(digest_of <(echo "$out"))" ]; then
  ok "configs/imagefolder_resnet18.toml at 32 px trains with a worker, audited, digest $(digest_of <(echo "$out"))"
else
  not_ok "configs/imagefolder_resnet18.toml at 32 px: exit $rc" "$out"
fi

cli_summary
