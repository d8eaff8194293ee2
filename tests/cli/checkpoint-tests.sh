#!/usr/bin/env bash
# Checkpoint-restart from the command line: retention and the `latest` pointer, ckpt
# inspect/verify, resume skipping corrupt or truncated checkpoints, refusal of a checkpoint of
# another model or batch size (exit 2), SIGTERM -> checkpoint + exit 75 -> bit-identical
# resume, resuming with more trainers (audited), AdamW with a multi-step schedule, clipping and
# label smoothing killed and resumed bit-identically, and a full file system (a small tmpfs)
# that leaves the previous checkpoint intact.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
if [ ! -d "$DATA/mnist" ]; then
  ok "checkpoint tests (skipped: $DATA/mnist not found)"
  cli_summary
  exit
fi
RUN=("${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml --set data.train_limit=6000
  --set train.epochs=2 --set train.log_every=0)
ckpts() { find "$1/checkpoints" -name 'ckpt-*.h5' | sort; }

# --- reference, retention, latest, inspect, verify ----------------------------------------------
out=$("${RUN[@]}" --set run.dir="$TMP/ref" --set checkpoint.every_steps=20 --set checkpoint.keep=2 2>&1)
ref=$(digest_of <(echo "$out"))
mapfile -t files < <(ckpts "$TMP/ref")
latest=$(cat "$TMP/ref/checkpoints/latest" 2>/dev/null)
if [ -n "$ref" ] && [ "${#files[@]}" -eq 2 ] && [ "$latest" = ckpt-000000094.h5 ] &&
  [ "$(basename "${files[0]}")" = ckpt-000000080.h5 ]; then
  ok "keep = 2: ckpt-000000080.h5 and ckpt-000000094.h5 remain, latest names the newest"
else
  not_ok "retention: files '${files[*]}', latest '$latest', digest '$ref'" "$out"
fi
out=$("$CONFLUX" ckpt verify "${files[@]}" 2>&1)
if [ "$(grep -c '^ok .*checksum verified' <<<"$out")" -eq 2 ]; then ok "ckpt verify: both intact"; else not_ok "ckpt verify" "$out"; fi
out=$("$CONFLUX" ckpt inspect "${files[1]}" 2>&1)
if grep -q 'global.step.*94' <<<"$out" && grep -q 'layer' <<<"$out" && grep -q '784' <<<"$out"; then
  ok "ckpt inspect shows the position and the model tensors"
else
  not_ok "ckpt inspect" "$out"
fi

# --- a finished run resumes to the same result -------------------------------------------------
out=$("${RUN[@]}" --set run.dir="$TMP/ref" --resume auto 2>&1)
if grep -q "resuming from .*ckpt-000000094.h5" <<<"$out" && [ "$(digest_of <(echo "$out"))" = "$ref" ]; then
  ok "resuming a finished run reports the same digest"
else
  not_ok "resume of a finished run" "$out"
fi

# --- corrupt and truncated checkpoints are skipped ---------------------------------------------
"${RUN[@]}" --set run.dir="$TMP/c" --set checkpoint.every_steps=30 --set checkpoint.keep=5 \
  --set checkpoint.final=false --set data.audit=true >/dev/null 2>&1
newest=$TMP/c/checkpoints/ckpt-000000090.h5
size=$(stat -c %s "$newest")
printf '\xde\xad\xbe\xef' | dd of="$newest" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect_fail "ckpt verify of a checkpoint with flipped bytes" 2 "checksum" -- "$CONFLUX" ckpt verify "$newest"
out=$("${RUN[@]}" --set run.dir="$TMP/c" --resume auto 2>&1)
if grep -q "skipping checkpoint $newest: .*checksum" <<<"$out" && grep -q "resuming from .*ckpt-000000060.h5" <<<"$out" &&
  [ "$(digest_of <(echo "$out"))" = "$ref" ]; then
  ok "flipped bytes: the newest is skipped, ckpt-000000060 resumes to the reference digest"
else
  not_ok "resume past a corrupt checkpoint" "$out"
fi
"${RUN[@]}" --set run.dir="$TMP/t" --set checkpoint.every_steps=30 --set checkpoint.final=false >/dev/null 2>&1
newest=$TMP/t/checkpoints/ckpt-000000090.h5
truncate -s $(($(stat -c %s "$newest") * 2 / 3)) "$newest"
out=$("${RUN[@]}" --set run.dir="$TMP/t" --resume auto 2>&1)
if grep -q "skipping checkpoint $newest" <<<"$out" && grep -q "resuming from .*ckpt-000000060.h5" <<<"$out" &&
  [ "$(digest_of <(echo "$out"))" = "$ref" ]; then
  ok "truncated: the newest is skipped, ckpt-000000060 resumes to the reference digest"
else
  not_ok "resume past a truncated checkpoint" "$out"
fi
expect_fail "--resume FILE naming a truncated checkpoint" 2 "checkpoint $newest" 3 -- \
  "${RUN[@]}" --set run.dir="$TMP/t" --resume "$newest"

# --- every checkpoint corrupt: exit 2 unless on_all_corrupt = "restart"; rejected files are
# renamed *.corrupt and never count toward checkpoint.keep ------------------------------------
"${RUN[@]}" --set run.dir="$TMP/ac" --set checkpoint.every_steps=30 --set checkpoint.final=false >/dev/null 2>&1
for f in "$TMP"/ac/checkpoints/ckpt-*.h5; do truncate -s 1000 "$f"; done
expect_fail "all checkpoints corrupt: exit 2, each named" 2 "all 3 checkpoint(s) in $TMP/ac/checkpoints were rejected (ckpt-000000090.h5: " 3 -- \
  "${RUN[@]}" --set run.dir="$TMP/ac" --resume auto
if [ "$(ckpts "$TMP/ac" | wc -l)" -eq 3 ]; then
  ok "all checkpoints corrupt: the files are left as they were"
else
  not_ok "all corrupt: files changed: $(ckpts "$TMP/ac" | tr '\n' ' ')"
fi
out=$("${RUN[@]}" --set run.dir="$TMP/ac" --resume auto --set checkpoint.on_all_corrupt=restart \
  --set checkpoint.every_steps=30 --set checkpoint.keep=2 2>&1)
corrupt=$(find "$TMP/ac/checkpoints" -name 'ckpt-*.h5.corrupt' | wc -l)
if grep -q "3 checkpoint(s) in $TMP/ac/checkpoints rejected and renamed \*.corrupt; starting from scratch" <<<"$out" &&
  [ "$(digest_of <(echo "$out"))" = "$ref" ] && [ "$corrupt" -eq 3 ] && [ "$(ckpts "$TMP/ac" | wc -l)" -eq 2 ]; then
  ok "on_all_corrupt = restart: from scratch to the reference digest, 3 set aside, keep = 2 valid kept"
else
  not_ok "on_all_corrupt = restart ($corrupt set aside, $(ckpts "$TMP/ac" | wc -l) kept)" "$out"
fi

# --- checkpoints of another training problem are refused --------------------------------------
sed 's/^out = 512/out = 128/' configs/mnist_mlp.toml >"$TMP/narrow.toml"
expect_fail "checkpoint of another model shape" 2 "holds a model of another shape" 3 -- \
  "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config "$TMP/narrow.toml" --set data.train_limit=6000 \
  --set train.epochs=2 --set run.dir="$TMP/c" --resume auto
expect_fail "checkpoint of another batch size" 2 "was made with train.batch_size = 128" 3 -- \
  "${RUN[@]}" --set run.dir="$TMP/c" --set train.batch_size=64 --resume auto

# --- more trainers: every remaining sample exactly once ----------------------------------------
out=$("${MPIRUN[@]}" -np 4 "$CONFLUX" train --config configs/mnist_mlp.toml --set data.train_limit=6000 \
  --set train.epochs=2 --set train.log_every=0 --set cluster.trainers=3 --set data.audit=true \
  --set run.dir="$TMP/c" --resume "$TMP/c/checkpoints/ckpt-000000060.h5" 2>&1)
if grep -q "epoch 2/2 batches.*audit: all 6000 samples used exactly once" <<<"$out" && grep -q "trainer 2/3" <<<"$out"; then
  ok "2-trainer checkpoint resumed on 3 trainers: the audit passes"
else
  not_ok "resume with 3 trainers" "$out"
fi

# --- SIGTERM: checkpoint at the next step, exit 75, bit-identical resume ------------------------
# Two epochs (over 2 s), so that the signal 1.5 s after start-up lands mid-run on a fast machine.
"${RUN[@]}" --set data.train_limit=60000 --set train.epochs=2 --set run.dir="$TMP/s" >"$TMP/s.log" 2>&1 &
job=$!
for _ in $(seq 1 200); do [ "$(grep -c ', pid [0-9]*,' "$TMP/s.log")" -ge 3 ] && break; sleep 0.1; done
sleep 1.5
# As SLURM does: the signal goes to every rank (not to mpirun, which would abort the job).
mapfile -t pids < <(grep -oP ', pid \K[0-9]+' "$TMP/s.log")
kill -TERM "${pids[@]}"
wait "$job"
rc=$?
if [ "$rc" -eq 75 ] && grep -q "stop requested by SIGTERM: checkpoint at step [0-9]* written" "$TMP/s.log"; then
  ok "SIGTERM: checkpoint, exit 75"
else
  not_ok "SIGTERM: exit $rc" "$(cat "$TMP/s.log")"
fi
out=$("${RUN[@]}" --set data.train_limit=60000 --set train.epochs=2 --set run.dir="$TMP/s" --resume auto 2>&1)
ref1=$("${RUN[@]}" --set data.train_limit=60000 --set train.epochs=2 --set run.dir="$TMP/s1" 2>&1 | sed -n 's/^model digest: //p')
if grep -q "resuming from" <<<"$out" && [ -n "$ref1" ] && [ "$(digest_of <(echo "$out"))" = "$ref1" ]; then
  ok "resumed after SIGTERM: same digest as an uninterrupted run"
else
  not_ok "resume after SIGTERM (want $ref1)" "$out"
fi

# --- repeated stop signals: only the first counts, the job still exits 75 ---------------------
# SLURM sends TERM after USR1 at a time limit and mpirun forwards repeats; before the fix a
# second USR1 reaching a rank after its handler was gone killed it (exit 138). The second
# signal goes 0, 0.1 and 0.2 s after the first; the last run gets one every 20 ms until the job
# has ended (before the fix: 138 in 3 of 3 tries).
repeat_signal_run() {  # repeat_signal_run NAME GAP|burst SIGNAL2
  local name=$1 gap=$2 second=$3 log=$TMP/rs-$1.log
  "${RUN[@]}" --set data.train_limit=60000 --set train.epochs=2 --set run.dir="$TMP/rs-$name" >"$log" 2>&1 &
  local job=$!
  for _ in $(seq 1 200); do [ "$(grep -c ', pid [0-9]*,' "$log")" -ge 3 ] && break; sleep 0.1; done
  sleep 0.5
  mapfile -t rpids < <(grep -oP ', pid \K[0-9]+' "$log")
  kill -USR1 "${rpids[@]}"
  if [ "$gap" = burst ]; then
    while kill -0 "$job" 2>/dev/null; do
      kill "-$second" "${rpids[@]}" 2>/dev/null
      sleep 0.02
    done
  else
    sleep "$gap"
    kill "-$second" "${rpids[@]}" 2>/dev/null
  fi
  wait "$job"
  local rc=$?
  if [ "$rc" -eq 75 ] && grep -q "stop requested by SIGUSR1: checkpoint at step [0-9]* written" "$log"; then
    ok "USR1 then $second after $gap: checkpoint, exit 75"
  else
    not_ok "USR1 then $second after $gap: exit $rc (want 75)" "$(cat "$log")"
  fi
}
repeat_signal_run a 0 USR1
repeat_signal_run b 0.1 TERM
repeat_signal_run c 0.2 USR1
repeat_signal_run d burst USR1

# --- AdamW, warm-up, multi-step decay, clipping, label smoothing: killed and resumed -----------
# The shipped configs/mnist_mlp_adamw.toml, its milestones moved into this 2-epoch run (469 steps
# each). The reference runs uninterrupted; a second run is killed (SIGKILL: no checkpoint on the
# way out) after its first periodic checkpoint and resumed with --resume auto; a third resumes
# from a mid-epoch checkpoint file. All must give the reference digest: the optimiser's moments
# and step count travel in the checkpoint.
ADAM=("${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp_adamw.toml
  --set data.train_limit=60000 --set train.epochs=2 --set train.log_every=0
  --set train.warmup_steps=50 --set 'train.lr_milestones=[300, 700]' --set checkpoint.every_steps=100
  --set checkpoint.keep=20)
out=$("${ADAM[@]}" --set run.dir="$TMP/adam-ref" 2>&1)
aref=$(digest_of <(echo "$out"))
info=$("$CONFLUX" ckpt inspect "$TMP/adam-ref/checkpoints/ckpt-000000900.h5" 2>&1)
if [ -n "$aref" ] && grep -q "optimizer: adamw" <<<"$info" && grep -q "steps.*900" <<<"$info" &&
  grep -q "exp_avg_sq" <<<"$info"; then
  ok "adamw run: digest, ckpt inspect shows the optimiser, its steps and moments"
else
  not_ok "adamw reference run" "$out$info"
fi
"${ADAM[@]}" --set run.dir="$TMP/adam-kill" >"$TMP/adam-kill.log" 2>&1 &
job=$!
for _ in $(seq 1 400); do [ -e "$TMP/adam-kill/checkpoints/ckpt-000000100.h5" ] && break; sleep 0.05; done
mapfile -t pids < <(grep -oP ', pid \K[0-9]+' "$TMP/adam-kill.log")
kill -KILL "${pids[@]}" 2>/dev/null
wait "$job"
rc=$?
out=$("${ADAM[@]}" --set run.dir="$TMP/adam-kill" --resume auto 2>&1)
if [ "$rc" -ne 0 ] && ! grep -q "^model digest" "$TMP/adam-kill.log" && grep -q "resuming from" <<<"$out" &&
  [ "$(digest_of <(echo "$out"))" = "$aref" ]; then
  ok "adamw + multistep + clipping + label smoothing: killed (exit $rc), resumed to the same digest"
else
  not_ok "adamw killed and resumed (killed run exit $rc; want $aref)" "$(cat "$TMP/adam-kill.log")$out"
fi
out=$("${ADAM[@]}" --set run.dir="$TMP/adam-mid" --resume "$TMP/adam-ref/checkpoints/ckpt-000000600.h5" 2>&1)
if [ "$(digest_of <(echo "$out"))" = "$aref" ]; then
  ok "adamw resumed from the step-600 checkpoint (epoch 2, after the first decay): same digest"
else
  not_ok "adamw resume from ckpt-000000600 (want $aref)" "$out"
fi
expect_fail "resume with another optimiser" 2 "was made with train.optimizer = 'adamw'" 3 -- \
  "${ADAM[@]}" --set run.dir="$TMP/adam-ref" --set train.optimizer=adam --resume auto
# Clipping and smoothing take part: without them the short run ends elsewhere.
SHORT=("${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/mnist_mlp_adamw.toml --set data.train_limit=3000
  --set train.epochs=1 --set train.log_every=0 --set 'train.lr_milestones=[100]')
d_all=$("${SHORT[@]}" --set run.dir="$TMP/adam-a" 2>&1 | sed -n 's/^model digest: //p')
d_noclip=$("${SHORT[@]}" --set run.dir="$TMP/adam-b" --set train.clip_grad_norm=0 2>&1 | sed -n 's/^model digest: //p')
d_nosmooth=$("${SHORT[@]}" --set run.dir="$TMP/adam-c" --set train.label_smoothing=0 2>&1 | sed -n 's/^model digest: //p')
if [ -n "$d_all" ] && [ -n "$d_noclip" ] && [ -n "$d_nosmooth" ] && [ "$d_all" != "$d_noclip" ] &&
  [ "$d_all" != "$d_nosmooth" ]; then
  ok "clip_grad_norm = 1 and label_smoothing = 0.1 each change the trained model"
else
  not_ok "clipping/smoothing effect: '$d_all' '$d_noclip' '$d_nosmooth'"
fi

# --- a full file system leaves the previous checkpoint intact -----------------------------------
small=$TMP/small
mkdir -p "$small"
if mount -t tmpfs -o size=6m tmpfs "$small" 2>/dev/null; then
  out=$("${RUN[@]}" --set run.dir="$TMP/f" --set checkpoint.dir="$small" --set checkpoint.every_steps=20 2>&1)
  rc=$?
  mapfile -t left < <(find "$small" -type f ! -name .conflux-lock | sort)
  if [ "$rc" -eq 3 ] && grep -q "could not be written.*the previous checkpoint $small/ckpt-000000020.h5 is intact" <<<"$out" &&
    [ "${left[*]}" = "$small/ckpt-000000020.h5 $small/latest" ] && "$CONFLUX" ckpt verify "$small/ckpt-000000020.h5" >/dev/null; then
    ok "full file system: exit 3, ckpt-000000020 intact and still latest, no temp file left"
  else
    not_ok "full file system: exit $rc, files '${left[*]}'" "$out"
  fi
  umount "$small"
  # A read-only checkpoint directory is found at start-up (exit 2 naming the key), not at the
  # first checkpoint after training for a while (exit 3).
  mount -t tmpfs -o size=1m,ro tmpfs "$small"
  expect_fail "read-only checkpoint.dir: exit 2 at start-up, naming the key" 2 "checkpoint.dir cannot be used" 3 -- \
    "${RUN[@]}" --set run.dir="$TMP/ro" --set checkpoint.dir="$small" --set checkpoint.every_steps=20
  umount "$small"
else
  ok "full file system (skipped: cannot mount a tmpfs here; needs root)"
fi

cli_summary
