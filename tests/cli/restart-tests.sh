#!/usr/bin/env bash
# Fault-injection tests of tools/run-until-done.sh with conflux under mpirun (no scheduler):
# 3 ranks = 2 trainers + 1 worker, checkpoints every 20 steps, --resume auto.
#   - kill -9 of trainer rank 1 at a random moment after the first checkpoint: mpirun aborts,
#     the wrapper relaunches, conflux resumes and ends with the digest of an uninterrupted run;
#   - the same for the worker (rank 2);
#   - exit 2 (bad input) is passed through at once, without a relaunch;
#   - a command that always fails is relaunched --max-restarts times, then given up, and sees
#     CONFLUX_RESTART_COUNT = 0, 1, 2, ...;
#   - SIGUSR1 to the wrapper reaches conflux (through mpirun), which checkpoints and exits 75;
#     the wrapper stops with 75 instead of relaunching, and a later --resume auto run finishes
#     with the reference digest;
#   - SIGTERM to the wrapper with --forward-as USR1 has the same effect (mpirun itself would
#     kill the ranks on SIGTERM).
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
WRAP=tools/run-until-done.sh
# The wrapper must signal mpirun itself: GNU timeout (lib.sh's MPIRUN starts with it) does not
# relay SIGUSR1, so the time limit goes around the wrapper instead.
MPI=("${MPIRUN[@]}")
if [ "${MPI[0]}" = timeout ]; then MPI=("${MPI[@]:2}"); fi
LIMIT=(timeout 150)
# Long enough (about 4 s of training on 2 cores, 470 steps) that a kill lands mid-run.
CFG=(--config configs/mnist_mlp.toml --set cluster.trainers=2 --set data.train_limit=30000
  --set train.epochs=2 --set data.test_limit=2000 --set train.log_every=0 --set checkpoint.every_steps=20)
log_digest() { sed -n 's/^model digest: //p' "$1" | tail -1; }

if [ ! -d "$DATA/mnist" ]; then
  ok "restart tests (skipped: $DATA/mnist not found)"
  cli_summary
  exit
fi

# --- reference: one uninterrupted run ----------------------------------------------------------
start=$SECONDS
"${LIMIT[@]}" "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --set "run.dir=$TMP/ref" >"$TMP/ref.log" 2>&1
rc=$?
ref=$(log_digest "$TMP/ref.log")
if [ "$rc" -eq 0 ] && [ -n "$ref" ]; then
  ok "reference run: digest $ref ($((SECONDS - start)) s)"
else
  not_ok "reference run: exit $rc" "$(cat "$TMP/ref.log")"
fi

# kill_rank DIR LOG PATTERN: waits until the run in DIR has checkpointed at a random global
# step between 20 and 200 (of 470), then kill -9's the rank whose start line in LOG matches
# PATTERN ("r1 trainer 1/2": the rank and its role, as in "[conflux r1 <time>] trainer 1/2
# (host H, pid P, ..."). Keyed to the run's progress, not to a sleep: on a fast CPU the whole
# run takes about a second, and a random sleep after the first checkpoint outlasted it.
kill_rank() {
  local dir=$1 log=$2 pattern=$3 pid="" step target=$((20 * (1 + RANDOM % 10)))
  for _ in $(seq 1 3000); do
    step=$(sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' "$dir/checkpoints/latest" 2>/dev/null)
    [ -n "$step" ] && [ "$step" -ge "$target" ] && break
    sleep 0.02
  done
  pid=$(grep -oP "^\[conflux ${pattern%% *} [^]]*\] ${pattern#* } \(host \S+, pid \K[0-9]+" "$log" | head -1)
  if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
    echo "killed $pattern (pid $pid), newest checkpoint then $(cat "$dir/checkpoints/latest" 2>/dev/null)" >"$dir.killed"
  else
    echo "could not kill '$pattern' (pid '$pid')" >"$dir.killed"
  fi
}

# kill_test NAME PATTERN: run under the wrapper, kill -9 the rank matching PATTERN once.
kill_test() {
  local name=$1 pattern=$2 dir=$TMP/$1 log=$TMP/$1.log rc start=$SECONDS killer
  : >"$log"
  kill_rank "$dir" "$log" "$pattern" &
  killer=$!
  "${LIMIT[@]}" "$WRAP" --delay 0.5 --max-restarts 3 -- "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" \
    --resume auto --set "run.dir=$dir" >"$log" 2>&1
  rc=$?
  wait "$killer"
  local what digest
  what=$(cat "$dir.killed" 2>/dev/null)
  digest=$(log_digest "$log")
  if [ "$rc" -eq 0 ] && [[ $what == killed* ]] && grep -q 'run-until-done: attempt 1 exited with [0-9]*; relaunching (1/3)' "$log" &&
    grep -q '^\[conflux r0 [^]]*\] resuming from .*ckpt-[0-9]\{9\}\.h5: epoch [0-9]* step [0-9]* (global step [0-9]*' "$log" &&
    [ -n "$ref" ] && [ "$digest" = "$ref" ]; then
    ok "$name: $what; relaunched ($(grep -oP 'attempt 1 exited with \K[0-9]+' "$log")), $(grep -oP '^\[conflux r0 [^]]*\] \Kresuming from \S+' "$log" | head -1 | sed "s|$TMP/||"), same digest ($((SECONDS - start)) s)"
  else
    not_ok "$name: wrapper exit $rc, ${what:-no kill}, digest '$digest' (want '$ref')" "$(grep -v '^\[conflux r0 [^]]*\] checkpoint at' "$log")"
  fi
}
kill_test kill-trainer "r1 trainer 1/2"
kill_test kill-worker "r2 worker 0/1"

# --- exit 2: bad input is never relaunched -------------------------------------------------------
out=$("${LIMIT[@]}" "$WRAP" --delay 0 -- "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --set train.lr=fast \
  --set "run.dir=$TMP/bad" 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && grep -qF "train.lr: expected a number" <<<"$out" &&
  grep -qF "run-until-done: attempt 1 exited with 2 (bad input); not relaunching" <<<"$out" && ! grep -q relaunching\ \( <<<"$out"; then
  ok "bad --set: exit 2 passed through, no relaunch"
else
  not_ok "bad --set under the wrapper: exit $rc (want 2)" "$out"
fi

# --- giving up after --max-restarts; CONFLUX_RESTART_COUNT ----------------------------------------
out=$("${LIMIT[@]}" "$WRAP" --max-restarts 2 --delay 0 -- false 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && [ "$(grep -c 'relaunching' <<<"$out")" -eq 2 ] && grep -qF "relaunching (2/2)" <<<"$out" &&
  grep -qF "run-until-done: attempt 3 exited with 1; giving up after 2 relaunch(es)" <<<"$out"; then
  ok "always failing command: 2 relaunches, then exit 1"
else
  not_ok "always failing command: exit $rc (want 1)" "$out"
fi
# shellcheck disable=SC2016  # expanded by the inner bash
out=$("${LIMIT[@]}" "$WRAP" --max-restarts 3 --delay 0 -- bash -c 'echo "count $CONFLUX_RESTART_COUNT"; exit 3' 2>&1)
rc=$?
if [ "$rc" -eq 3 ] && [ "$(grep '^count' <<<"$out" | paste -sd' ')" = "count 0 count 1 count 2 count 3" ]; then
  ok "CONFLUX_RESTART_COUNT is 0, 1, 2, 3 over the attempts; last exit code 3 passed through"
else
  not_ok "CONFLUX_RESTART_COUNT: exit $rc" "$out"
fi
out=$("$WRAP" -- 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && grep -q '^usage:' <<<"$out" && "$WRAP" --help | grep -q -- '--max-restarts'; then
  ok "usage: no command is exit 2; --help"
else
  not_ok "usage: exit $rc" "$out"
fi

# signal_wrapper SIG [WRAPPER OPTION]...: runs conflux under the wrapper (run dir $dir, output
# $log), sends SIG to the wrapper once the first checkpoint exists, waits (killing it after
# 120 s if it hangs) and sets rc to its exit code.
signal_wrapper() {
  local sig=$1 wrapper watchdog
  shift
  "$WRAP" "$@" -- "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --resume auto --set "run.dir=$dir" >"$log" 2>&1 &
  wrapper=$!
  for _ in $(seq 1 600); do
    compgen -G "$dir/checkpoints/ckpt-*.h5" >/dev/null && break
    kill -0 "$wrapper" 2>/dev/null || break
    sleep 0.05
  done
  sleep 0.3
  kill -"$sig" "$wrapper"
  (sleep 120; kill -KILL "$wrapper") >/dev/null 2>&1 &
  watchdog=$!
  wait "$wrapper"
  rc=$?
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
}

# stopped_with_75 SIG: the wrapper stopped on SIG with conflux's exit 75 (ranks checkpointed, no
# relaunch). Under MPICH 4.0 the launcher itself may report 0 instead (hydra loses the exit codes
# of ranks that exit non-zero together: MPICH issue 7057, docs/launching.md); then the wrapper
# passes 0 on, and that is accepted only with conflux's own "exiting with 75" in the log. Sets
# $how for the ok line.
stopped_with_75() {
  how="exit 75"
  grep -qF "exiting with 75" "$log" || return 1
  if [ "$rc" -eq 75 ]; then
    grep -qF "run-until-done: attempt 1 exited with 75 after SIG$1; not relaunching" "$log"
    return
  fi
  how="mpiexec reported 0 for the ranks' 75 (MPICH 4.0, issue 7057)"
  [ "$CONFLUX_MPI" = mpich ] && [ "$rc" -eq 0 ] && ! grep -qF "run-until-done: attempt" "$log"
}

# --- SIGUSR1 to the wrapper: conflux checkpoints and exits 75, the wrapper stops -------------------
dir=$TMP/usr1
log=$TMP/usr1.log
start=$SECONDS
signal_wrapper USR1 --delay 0.5
if stopped_with_75 USR1 && grep -qF "run-until-done: got SIGUSR1; forwarding SIGUSR1" "$log" &&
  [ -z "$(log_digest "$log")" ]; then
  ok "SIGUSR1 to the wrapper: conflux checkpointed, $how, no relaunch ($(cat "$dir/checkpoints/latest" 2>/dev/null))"
else
  not_ok "SIGUSR1 to the wrapper: exit $rc (want 75)" "$(grep -v '^\[conflux r0 [^]]*\] checkpoint at' "$log")"
fi
"${LIMIT[@]}" "$WRAP" --delay 0.5 -- "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --resume auto --set "run.dir=$dir" >"$log.2" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^\[conflux r0 [^]]*\] resuming from ' "$log.2" && [ -n "$ref" ] && [ "$(log_digest "$log.2")" = "$ref" ]; then
  ok "the next --resume auto run carries on and gives the reference digest ($((SECONDS - start)) s for both)"
else
  not_ok "resume after SIGUSR1: exit $rc, digest '$(log_digest "$log.2")' (want '$ref')" "$(cat "$log.2")"
fi

# --- SIGTERM with --forward-as USR1: mpirun kills the ranks on SIGTERM, but relays SIGUSR1 --------
dir=$TMP/term
log=$TMP/term.log
signal_wrapper TERM --forward-as USR1
if stopped_with_75 TERM && grep -qF "run-until-done: got SIGTERM; forwarding SIGUSR1" "$log" &&
  grep -qF "stop requested by SIGUSR1" "$log"; then
  ok "SIGTERM to the wrapper with --forward-as USR1: conflux checkpointed, $how, no relaunch"
else
  not_ok "SIGTERM with --forward-as USR1: exit $rc (want 75)" "$(grep -v '^\[conflux r0 [^]]*\] checkpoint at' "$log")"
fi

# --- a second stop signal is not forwarded again: srun, once ending its step, dies of a second
# SIGUSR1 (exit 138) instead of passing on the tasks' exit 75 ---------------------------------------
counter=$TMP/count-usr1.sh
cat >"$counter" <<'EOS'
#!/usr/bin/env bash
n=0
trap 'n=$((n + 1)); echo "$n" >"$1"' USR1
for _ in $(seq 1 40); do sleep 0.05; done
exit 75
EOS
chmod +x "$counter"
"$WRAP" --forward-as USR1 -- "$counter" "$TMP/usr1-count" >"$TMP/twice-signal.log" 2>&1 &
wrapper=$!
sleep 0.5
kill -USR1 "$wrapper"
sleep 0.2
kill -TERM "$wrapper"
wait "$wrapper"
rc=$?
if [ "$rc" -eq 75 ] && [ "$(cat "$TMP/usr1-count" 2>/dev/null)" = 1 ] &&
  grep -qF "got SIGTERM; SIGUSR1 already forwarded" "$TMP/twice-signal.log"; then
  ok "USR1 then TERM to the wrapper: the command gets SIGUSR1 once, exit 75"
else
  not_ok "USR1 then TERM: exit $rc, command got SIGUSR1 $(cat "$TMP/usr1-count" 2>/dev/null) time(s) (want 75, 1)" \
    "$(cat "$TMP/twice-signal.log")"
fi

# --- two jobs on one run directory: the second exits 4 naming the holder, the wrapper does not
# relaunch it, and the first finishes with the reference digest -----------------------------------
dir=$TMP/twice
"${LIMIT[@]}" "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --resume auto --set "run.dir=$dir" >"$TMP/first.log" 2>&1 &
first=$!
for _ in $(seq 1 300); do grep -q "^\[conflux r0 [^]]*\] run '" "$TMP/first.log" && break; sleep 0.05; done
out=$("${LIMIT[@]}" "$WRAP" --delay 0.5 -- "${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --resume auto \
  --set "run.dir=$dir" 2>&1)
rc=$?
wait "$first"
first_rc=$?
if [ "$rc" -eq 4 ] && grep -q "the run directory $dir is in use by another conflux job (pid [0-9]* on host " <<<"$out" &&
  grep -qF "exited with 4 (run directory in use by another job); not relaunching" <<<"$out" &&
  [ "$first_rc" -eq 0 ] && [ "$(log_digest "$TMP/first.log")" = "$ref" ]; then
  ok "a second job on a run directory in use: exit 4 naming the holder, not relaunched; the first ends with the reference digest"
else
  not_ok "second job on one run directory: exit $rc (want 4), first exit $first_rc, digest '$(log_digest "$TMP/first.log")'" "$out"
fi

# --- kill -9 of mpirun: its ranks end at once (PR_SET_PDEATHSIG), not when MPI notices -----
"${MPI[@]}" -np 3 "$CONFLUX" train "${CFG[@]}" --set "run.dir=$TMP/orphan" >"$TMP/orphan.log" 2>&1 &
launcher=$!
for _ in $(seq 1 200); do [ "$(grep -c ', pid [0-9]*,' "$TMP/orphan.log")" -ge 3 ] && break; sleep 0.05; done
sleep 0.5
mapfile -t ranks < <(grep -oP ', pid \K[0-9]+' "$TMP/orphan.log")
kill -9 "$launcher"
gone_after=""
for i in $(seq 1 100); do
  alive=0
  # A dead rank may stay a zombie until the new parent reaps it: it counts as gone.
  for p in "${ranks[@]}"; do
    state=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)
    [ -n "$state" ] && [[ $state != Z* ]] && alive=$((alive + 1))
  done
  if [ "$alive" -eq 0 ]; then gone_after=$((i * 50)); break; fi
  sleep 0.05
done
if [ "${#ranks[@]}" -eq 3 ] && [ -n "$gone_after" ] && [ "$gone_after" -le 300 ]; then
  ok "kill -9 of mpirun: its 3 ranks ended within ${gone_after} ms"
else
  not_ok "orphaned ranks after kill -9 of mpirun: ${#ranks[@]} ranks, gone after '${gone_after}' ms (want <= 300; they used to notice the lost launcher after 400-500 ms here, 3-6 s elsewhere), $alive alive at the end"
  for p in "${ranks[@]}"; do kill -9 "$p" 2>/dev/null; done
fi

cli_summary
