#!/usr/bin/env bash
# Command-line tests of the data service with configs/mnist_mlp.toml (2 trainers): offload
# ratios 0, 0.5 and 1 with 1 and 3 worker ranks give bit-identical weights, the audit finds
# every sample used exactly once per epoch, a worker delayed by fault injection does not stall
# training, and bad service settings are clear errors.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

if [ ! -d "$DATA/mnist" ]; then
  echo "skip - data service CLI tests: $DATA/mnist not found"
  cli_summary
  exit
fi

# 6000 samples over 2 epochs: the last step of each epoch is short (6000 = 46 * 128 + 112).
SERVICE=(--set data.train_limit=6000 --set data.test_limit=500 --set train.epochs=2
  --set train.log_every=0 --set data.audit=true)
service_train() {  # service_train RANKS NAME [--set ...]...
  "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config configs/mnist_mlp.toml "${SERVICE[@]}" \
    --set "run.dir=$TMP/run-$2" "${@:3}" >"$TMP/$2.log" 2>&1
}

# Both epochs audited: each sample of the 6000 used exactly once.
audited() { [ "$(grep -c 'audit: all 6000 samples used exactly once' "$1")" -eq 2 ]; }

service_train 2 base --set data.offload_ratio=0
base=$(digest_of "$TMP/base.log")
if [ -n "$base" ] && audited "$TMP/base.log"; then
  ok "no workers: audit passes ($base)"
else
  not_ok "baseline run" "$(cat "$TMP/base.log")"
fi

for workers in 1 3; do
  for ratio in 0 0.5 1; do
    name="w$workers-r$ratio"
    service_train $((2 + workers)) "$name" --set "data.offload_ratio=$ratio"
    rc=$?
    d=$(digest_of "$TMP/$name.log")
    served=$(grep -oP 'worker \d+: served \K[0-9]+' "$TMP/$name.log" | awk '{ s += $1 } END { print s + 0 }')
    # Ratio 0 leaves the workers idle; any other ratio must use them.
    if [ "$ratio" = 0 ]; then want_served=0; else want_served=1; fi
    if [ "$rc" -eq 0 ] && [ "$d" = "$base" ] && audited "$TMP/$name.log" &&
      [ "$((served > 0 ? 1 : 0))" -eq "$want_served" ]; then
      ok "$workers worker(s), offload ratio $ratio: same weights, audit passes, workers served $served batches"
    else
      not_ok "$workers worker(s), ratio $ratio: rc $rc digest '$d' (want '$base'), served '$served'" "$(cat "$TMP/$name.log")"
    fi
  done
done

service_train 3 per-trainer --set "data.offload_ratios=[1.0, 0.0]"
if [ "$(digest_of "$TMP/per-trainer.log")" = "$base" ] &&
  grep -q 'trainer 0: batches 0 local, 94 from workers' "$TMP/per-trainer.log" &&
  grep -q 'trainer 1: batches 94 local, 0 from workers' "$TMP/per-trainer.log"; then
  ok "per-trainer offload ratios [1, 0]: same weights, trainer 0 all remote, trainer 1 all local"
else
  not_ok "per-trainer offload ratios" "$(cat "$TMP/per-trainer.log")"
fi

# Worker 0 answers its first 2 requests, then holds every answer for 2 s; the deadline is 0.3 s.
service_train 4 slow --set data.offload_ratio=1 --set fault.worker=0 --set fault.mode=delay \
  --set fault.delay_s=2 --set fault.after=2 --set data.worker_timeout_s=0.3
if [ "$(digest_of "$TMP/slow.log")" = "$base" ] && audited "$TMP/slow.log" &&
  grep -q 'worker 0 (rank 2) did not answer the request' "$TMP/slow.log" &&
  grep -qP ', [1-9][0-9]* rebuilt after a timeout' "$TMP/slow.log"; then
  ok "delayed worker: training finishes with the same weights and names the slow worker"
else
  not_ok "delayed worker" "$(cat "$TMP/slow.log")"
fi

service_train 3 stop --set data.offload_ratio=1 --set fault.worker=0 --set fault.mode=stop \
  --set fault.after=5 --set data.worker_timeout_s=0.3
if [ "$(digest_of "$TMP/stop.log")" = "$base" ] && grep -q 'worker 0 (rank 2) did not answer' "$TMP/stop.log"; then
  ok "stopped worker (the only one): trainers build the rest themselves, same weights, clean exit"
else
  not_ok "stopped worker" "$(cat "$TMP/stop.log")"
fi

# A worker frozen by SIGSTOP (so it answers nothing, not even the goodbye): the trainer builds
# the missed batches itself, publishes its results, and the job ends a few seconds after the
# last step with exit 0, not after cluster.peer_timeout_s with exit 3 and no model.
FROZEN=(--set cluster.trainers=1 --set data.train_limit=30000 --set train.epochs=1
  --set data.offload_ratio=0.5 --set data.worker_timeout_s=1 --set cluster.peer_timeout_s=20
  --set train.log_every=50)
"${MPIRUN[@]}" -np 1 "$CONFLUX" train --config configs/mnist_mlp.toml "${SERVICE[@]}" "${FROZEN[@]}" \
  --set "run.dir=$TMP/run-unfrozen" >"$TMP/unfrozen.log" 2>&1
"${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml "${SERVICE[@]}" "${FROZEN[@]}" \
  --set "run.dir=$TMP/run-frozen" >"$TMP/frozen.log" 2>&1 &
job=$!
# Frozen once training is under way (its first step report): start-up's collectives have no
# deadline, so a worker frozen there would hold the job until the launcher's time limit.
for _ in $(seq 1 300); do [ -s "$TMP/run-frozen/steps.jsonl" ] && break; sleep 0.1; done
frozen=$(grep -oP 'worker 1/2 \(host \S+, pid \K[0-9]+' "$TMP/frozen.log")
kill -STOP "$frozen"
last_step_at=""
while kill -0 "$job" 2>/dev/null; do
  [ -z "$last_step_at" ] && grep -q 'epoch 1/1 done' "$TMP/frozen.log" && last_step_at=$(date +%s.%N)
  sleep 0.1
done
wait "$job"
rc=$?
ended_at=$(date +%s.%N)
kill -KILL "$frozen" 2>/dev/null
[ -z "$last_step_at" ] && last_step_at=$ended_at
shutdown_s=$(python3 -c "print(round($ended_at - $last_step_at, 1))")
if [ "$rc" -eq 0 ] && [ -n "$(digest_of "$TMP/unfrozen.log")" ] &&
  [ "$(digest_of "$TMP/frozen.log")" = "$(digest_of "$TMP/unfrozen.log")" ] &&
  [ -f "$TMP/run-frozen/model.h5" ] && [ -f "$TMP/run-frozen/summary.json" ] &&
  grep -q 'stopped answering; the results are complete' "$TMP/frozen.log" &&
  python3 -c "import sys; sys.exit(0 if $shutdown_s <= 6 else 1)"; then
  ok "frozen worker: exit 0, model published, same digest, job gone ${shutdown_s} s after the last step"
else
  not_ok "frozen worker: rc $rc, shutdown ${shutdown_s} s after the last step" "$(cat "$TMP/frozen.log")"
fi

# signal_worker_mid_run NAME SIGNAL WORKER MPIRUN-ARGS... -- TRAIN-ARGS...: the FROZEN run NAME
# in the background; SIGNAL to worker WORKER (e.g. "1/2") once training is under way (its first
# step report); waits for the run and leaves its exit status in rc.
signal_worker_mid_run() {
  local name=$1 signal=$2 worker=$3 job mpi=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do mpi+=("$1"); shift; done
  shift
  "${MPIRUN[@]}" "${mpi[@]}" "$CONFLUX" train --config configs/mnist_mlp.toml "${SERVICE[@]}" \
    "${FROZEN[@]}" "$@" --set "run.dir=$TMP/run-$name" >"$TMP/$name.log" 2>&1 &
  job=$!
  for _ in $(seq 1 300); do [ -s "$TMP/run-$name/steps.jsonl" ] && break; sleep 0.1; done
  kill "-$signal" "$(grep -oP "worker $worker \(host \S+, pid \K[0-9]+" "$TMP/$name.log")"
  wait "$job"
  rc=$?
}

# SIGTERM to one worker alone: it says so and leaves the service; the trainer builds the rest
# itself and finishes with the same weights (the signal used to be ignored silently). One
# worker, so that the trainer's next remote request surely goes to it and meets its refusal.
signal_worker_mid_run leave TERM 0/1 -np 2 --
if [ "$rc" -eq 0 ] && [ "$(digest_of "$TMP/leave.log")" = "$(digest_of "$TMP/unfrozen.log")" ] &&
  grep -q 'worker 0: stop signal 15 received: leaving the data service' "$TMP/leave.log" &&
  grep -q 'worker rank 1 left the service' "$TMP/leave.log"; then
  ok "SIGTERM to one worker: it leaves the service, the trainer carries on to the same weights"
else
  not_ok "SIGTERM to one worker: rc $rc" "$(cat "$TMP/leave.log")"
fi

# A worker killed with SIGKILL (its process, or its host, gone): under Open MPI with recovery on
# (docs/data-service.md, "Losing a worker"), the launcher keeps the other ranks alive; the
# trainer's requests to the dead worker miss their deadline and are rebuilt locally, the other
# worker carries on, and the run ends with the same weights, every sample used once, and the
# lost worker named. mpirun's own exit status is 0 under recovery whatever the ranks return, so
# the test reads the run's results, not only the status.
if [ "$CONFLUX_MPI" = openmpi ]; then
  signal_worker_mid_run killed KILL 1/2 --mca orte_enable_recovery 1 \
    --mca orte_abort_on_non_zero_status 0 -np 3 -- --set data.offload_ratio=1
  if [ "$rc" -eq 0 ] && [ "$(digest_of "$TMP/killed.log")" = "$(digest_of "$TMP/unfrozen.log")" ] &&
    [ -f "$TMP/run-killed/summary.json" ] &&
    grep -q 'audit: all 30000 samples used exactly once' "$TMP/killed.log" &&
    grep -q 'worker 1 (rank 2) did not answer' "$TMP/killed.log" &&
    grep -q 'worker rank(s) 2 did not finish' "$TMP/killed.log"; then
    ok "worker killed (SIGKILL) mid-run: training finishes without a restart, same weights, audit passes, lost worker named"
  else
    not_ok "worker killed: rc $rc" "$(cat "$TMP/killed.log")"
  fi
  # The only worker killed: once its short back-off has ended, its credits are still held by
  # requests that missed their deadline, which a dead worker never answers; the trainer must
  # build the batches itself instead of waiting for them (it used to hang here).
  signal_worker_mid_run killed-only KILL 0/1 --mca orte_enable_recovery 1 \
    --mca orte_abort_on_non_zero_status 0 -np 2 -- --set data.offload_ratio=1 --set data.worker_backoff_s=0.5
  if [ "$rc" -eq 0 ] && [ "$(digest_of "$TMP/killed-only.log")" = "$(digest_of "$TMP/unfrozen.log")" ] &&
    [ -f "$TMP/run-killed-only/summary.json" ] &&
    grep -q 'audit: all 30000 samples used exactly once' "$TMP/killed-only.log" &&
    grep -q 'worker rank(s) 1 did not finish' "$TMP/killed-only.log"; then
    ok "the only worker killed (SIGKILL) mid-run: the trainer builds the rest itself after the back-off, same weights"
  else
    not_ok "only worker killed: rc $rc" "$(cat "$TMP/killed-only.log")"
  fi
else
  # Hydra kills every rank when one dies, -disable-auto-cleanup or not (docs/data-service.md).
  ok "worker killed mid-run (skipped: $CONFLUX_MPI's mpiexec ends the job when a rank dies; restart-tests.sh tests the relaunch)"
fi

# A user plugin runs on trainers and workers alike: it changes the model, not its placement.
PLUGIN=$(dirname "$CONFLUX")/../lib/libconflux-solarize.so
if [ -f "$PLUGIN" ]; then
  for ratio in 0 1; do
    service_train 3 "plugin-r$ratio" --set "transform.plugin=$PLUGIN" \
      --set 'transform.plugin_args="threshold=0.6,probability=0.5"' --set "data.offload_ratio=$ratio"
  done
  dp0=$(digest_of "$TMP/plugin-r0.log")
  dp1=$(digest_of "$TMP/plugin-r1.log")
  if [ -n "$dp0" ] && [ "$dp0" = "$dp1" ] && [ "$dp0" != "$base" ]; then
    ok "solarize plugin: changes the weights, identical with offload ratio 0 and 1"
  else
    not_ok "plugin digests '$dp0' '$dp1' (base '$base')" "$(cat "$TMP/plugin-r1.log")"
  fi
  expect_fail "plugin rejects its arguments: error on every rank" 2 "rejected by plugin" 3 -- \
    "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml "${QUICK[@]}" \
    --set "run.dir=$TMP/run-badargs" --set "transform.plugin=$PLUGIN" --set 'transform.plugin_args="bogus=1"'
else
  not_ok "example plugin not built: $PLUGIN"
fi

expect_fail "offload_ratios of the wrong length" 2 "data.offload_ratios has 3 values but cluster.trainers = 2" -- \
  "$CONFLUX" config check --config configs/mnist_mlp.toml --set "data.offload_ratios=[0.1, 0.2, 0.3]"
expect_fail "fault injection on a worker that does not exist: error on every rank" 2 "fault.worker = 3 names a worker the job does not have (1 worker rank(s))" 3 -- \
  "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml "${QUICK[@]}" \
  --set "run.dir=$TMP/run-fault" --set fault.worker=3
expect_fail "offload ratio out of range" 2 'data.offload_ratio: expected "auto" or a number in [0, 1]' -- \
  "$CONFLUX" config check --config configs/mnist_mlp.toml --set data.offload_ratio=1.5
expect_fail "missing plugin: error on every rank" 2 "cannot load '$TMP/none.so'" 3 -- \
  "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml "${QUICK[@]}" \
  --set "run.dir=$TMP/run-plugin" --set "transform.plugin=$TMP/none.so"

cli_summary
