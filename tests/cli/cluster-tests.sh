#!/usr/bin/env bash
# Multi-host tests on the simulated cluster of tools/sim-cluster.sh (docs/cluster-tests.md):
# four hosts h0..h3, each with its own network namespace, hostname and /dev/shm, joined by a
# bridge; Open MPI between them over TCP; a SLURM node per host. The same training run (2
# trainers, 2 workers serving every batch, sample audit on) must give the digest of a run on
# this one machine:
#   - under mpirun (tools/hostfile-launch.sh from head: trainers on h0,h1, workers on h2,h3);
#   - under srun -N 4 (one rank per host: the trainers on two hosts, the workers on the others);
#   - under srun -N 2 --ntasks-per-node=2 (both trainers on one host, both workers on another);
# and the role log must name each rank's host and node-local rank. Also: the cluster leaves
# this machine's own addresses and links alone, and shared memory does not reach across hosts.
# The cluster is started here and stopped at exit, also when a test fails (and by its watchdog
# when this script is killed). Skipped, with the reason, where namespaces cannot be made (not
# root, no CAP_SYS_ADMIN, no ip) or the build's MPI is not Open MPI; the srun tests need SLURM.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=slurm/lib/requeue.sh
source slurm/lib/requeue.sh
SIM=tools/sim-cluster.sh
export SIM_CLUSTER_ROOT=$TMP/cluster
suite_start=$SECONDS

skip_all() {
  ok "multi-host tests (skipped: $1)"
  cli_summary
  exit
}
[ "$CONFLUX_MPI" = openmpi ] || skip_all "the simulated cluster's launcher is Open MPI's rsh agent; this build uses $CONFLUX_MPI"
[ -d "$DATA/mnist" ] || skip_all "$DATA/mnist not found"
if ! why=$("$SIM" check); then skip_all "${why#sim-cluster: }"; fi
slurm=1
for t in sbatch srun slurmctld slurmd munged; do
  command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || slurm=0
done

trap '"$SIM" stop >/dev/null 2>&1; rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
ip -o addr >"$TMP/addr-before"
ip -o link | sed 's/^[0-9]*: //' >"$TMP/link-before"
t0=$SECONDS
start_args=(--owner $$)
[ "$slurm" -eq 1 ] || start_args+=(--no-slurm)
if out=$(timeout 120 "$SIM" start "${start_args[@]}" 2>&1); then
  ok "simulated cluster up in $((SECONDS - t0)) s: $(tail -1 <<<"$out" | sed 's/^sim-cluster: up: //')"
else
  not_ok "tools/sim-cluster.sh start" "$out"
  cli_summary
  exit
fi

# --- the hosts and this machine ------------------------------------------------------------------
ip -o addr >"$TMP/addr-after"
ip -o link | sed 's/^[0-9]*: //' >"$TMP/link-after"
if cmp -s "$TMP/addr-before" "$TMP/addr-after" && cmp -s "$TMP/link-before" "$TMP/link-after"; then
  ok "this machine's own addresses and links are unchanged"
else
  not_ok "the cluster changed this machine's addresses or links" \
    "$(diff "$TMP/addr-before" "$TMP/addr-after"; diff "$TMP/link-before" "$TMP/link-after")"
fi
bad=""
for i in 0 1 2 3; do
  # shellcheck disable=SC2016  # expanded on the host
  got=$(timeout 10 "$SIM" exec "h$i" sh -c 'echo "$(hostname) $(ip -o -4 addr show eth0)"' 2>&1)
  [[ $got =~ ^h$i\ .*\ inet\ 10\.77\.0\.$((i + 1))/24 ]] || bad+="h$i: $got; "
done
if [ -z "$bad" ]; then ok "hosts h0..h3: own hostname, 10.77.0.1-4 on eth0"; else not_ok "hosts: $bad"; fi

# --- the runs ------------------------------------------------------------------------------------
# 2 trainers and 2 workers that build every batch (offload ratio 1), so that batches cross hosts.
RUN=(--set data.train_limit=2000 --set data.test_limit=200 --set train.epochs=1 --set train.log_every=0
  --set data.audit=true --set data.offload_ratio=1)
TRAIN=("$CONFLUX" train --config configs/mnist_mlp.toml "${RUN[@]}" --set cluster.trainers=2)
"${MPIRUN[@]}" -np 4 "${TRAIN[@]}" --set "run.dir=$TMP/ref" >"$TMP/ref.log" 2>&1
ref=$(digest_of "$TMP/ref.log")
[ -n "$ref" ] || not_ok "the one-host reference run (mpirun -np 4)" "$(cat "$TMP/ref.log")"

# roles LOG "RANK ROLE I/N HOST NODE-LOCAL" ...: each rank's role line ("trainer 0/2 (host h0,
# pid P, node-local rank 0/1)") names that host and node-local rank; prints what is missing.
roles() {
  local log=$1 spec r role idx host nl missing=""
  shift
  for spec in "$@"; do
    read -r r role idx host nl <<<"$spec"
    grep -qE "^\[conflux r$r [^]]*\] $role $idx \(host $host, pid [0-9]+, node-local rank $nl\)" "$log" ||
      missing+="r$r $role $idx on $host node-local $nl; "
  done
  echo "$missing"
}
# check_run NAME LOG RC ROLE-SPECS...: exit 0, the reference digest, audit, workers served
# batches, and the roles where they should be.
check_run() {
  local name=$1 log=$2 rc=$3 d served missing
  shift 3
  d=$(digest_of "$log")
  served=$(grep -oP 'worker \d+: served \K[0-9]+' "$log" | awk '{ s += $1 } END { print s + 0 }')
  missing=$(roles "$log" "$@")
  if [ "$rc" -eq 0 ] && [ -n "$ref" ] && [ "$d" = "$ref" ] && [ -z "$missing" ] && [ "$served" -gt 0 ] &&
    grep -q 'audit: all 2000 samples used exactly once' "$log"; then
    ok "$name: one-host digest, audit passes, workers served $served batches, roles on their hosts"
  else
    not_ok "$name: exit $rc, digest '$d' (want '$ref'), served $served, missing roles: ${missing:-none}" "$(cat "$log")"
  fi
}
on_head() { timeout 180 "$SIM" exec head "$@"; }
# What SLURM says about its nodes, for a failed srun test.
slurm_state() {
  on_head sinfo -N -l 2>&1
  on_head sinfo -R 2>&1
  tail -n 15 "$SIM_CLUSTER_ROOT"/slurm/log/slurm*.log
}

# mpirun from head: hostfile-launch.sh's two app contexts, Open MPI's rsh launcher into h0..h3.
on_head tools/hostfile-launch.sh --bin "$CONFLUX" --config configs/mnist_mlp.toml \
  --trainer-hosts h0,h1 --worker-hosts h2,h3 -- "${RUN[@]}" --set "run.dir=$TMP/mpirun" >"$TMP/mpirun.log" 2>&1
check_run "mpirun, trainers on h0,h1, workers on h2,h3" "$TMP/mpirun.log" $? \
  "0 trainer 0/2 h0 0/1" "1 trainer 1/2 h1 0/1" "2 worker 0/2 h2 0/1" "3 worker 1/2 h3 0/1"

# Without TCP the hosts cannot talk: no shared memory reaches across them.
out=$(on_head mpirun --mca btl self,vader -np 2 --host h0,h1 "${TRAIN[@]}" --set cluster.trainers=1 \
  --set "run.dir=$TMP/no-tcp" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'unable to reach each other' <<<"$out"; then
  ok "without the TCP transport ranks on h0 and h1 cannot reach each other (exit $rc)"
else
  not_ok "btl self,vader across two hosts: exit $rc" "$out"
fi

# conflux-bench tcp between h0 and h1: the raw TCP stream goes to rank 1's eth0 address, and
# MPI_Send and the allreduce between the same ranks are reported against it (a few seconds).
out=$(on_head mpirun -np 2 --host h0,h1 "${CONFLUX}-bench" tcp --mib 8 --rounds 1 \
  --allreduce-mib 1 --allreduce-iters 2 2>&1)
rc=$?
tcp=$(grep -oP '^raw TCP socket stream +\K[0-9]+' <<<"$out")
if [ "$rc" -eq 0 ] && grep -q 'rank 0 streams to rank 1 at 10\.77\.0\.2 ' <<<"$out" &&
  [ "${tcp:-0}" -gt 0 ] && grep -qP '^MPI_Send/MPI_Recv, 8 MiB messages +[1-9][0-9]* +[0-9]+ ' <<<"$out" &&
  grep -qP '^gradient allreduce, 1 MiB float32 \(busbw\) +[1-9]' <<<"$out"; then
  ok "conflux-bench tcp across h0,h1: raw TCP $tcp MiB/s to 10.77.0.2, MPI_Send and allreduce against it"
else
  not_ok "conflux-bench tcp across h0,h1: exit $rc" "$out"
fi

if [ "$slurm" -eq 0 ]; then
  ok "srun tests (skipped: no SLURM: make test-deps installs slurm-wlm and munge)"
else
  SRUN=(srun "$(conflux_srun_mpi "$CONFLUX")" --time=3)
  on_head "${SRUN[@]}" -N 4 -n 4 "${TRAIN[@]}" --set "run.dir=$TMP/srun4" >"$TMP/srun4.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || slurm_state >>"$TMP/srun4.log"
  check_run "srun -N 4, trainers on h0,h1, workers on h2,h3" "$TMP/srun4.log" "$rc" \
    "0 trainer 0/2 h0 0/1" "1 trainer 1/2 h1 0/1" "2 worker 0/2 h2 0/1" "3 worker 1/2 h3 0/1"
  # Block distribution: ranks 0,1 on the first node of the allocation, 2,3 on the second.
  on_head "${SRUN[@]}" -N 2 --ntasks-per-node=2 -w h1,h2 "${TRAIN[@]}" --set "run.dir=$TMP/srun2" >"$TMP/srun2.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || slurm_state >>"$TMP/srun2.log"
  check_run "srun -N 2 --ntasks-per-node=2, both trainers on h1, both workers on h2" "$TMP/srun2.log" "$rc" \
    "0 trainer 0/2 h1 0/2" "1 trainer 1/2 h1 1/2" "2 worker 0/2 h2 0/2" "3 worker 1/2 h2 1/2"
fi

# --- losing a node ----------------------------------------------------------------------------------
# The same mid-run loss twice: a host goes down for good once the run has checkpointed at step
# 60 or later (epoch 2 of 12): every process on it is killed and its link goes down.
LOSS=(--set data.train_limit=6000 --set data.test_limit=200 --set train.epochs=12 --set train.log_every=0
  --set data.audit=true --set data.offload_ratio=1 --set checkpoint.every_steps=20)
# down_after_checkpoint DIR STAMP [LOG]: in the background, waits for DIR's checkpoint at step 60+,
# writes the time to STAMP and takes down the host of worker 0 (from LOG's role line), or h1.
down_after_checkpoint() {
  (
    local host=h1 _
    for _ in $(seq 1 1200); do
      compgen -G "$1/ckpt-0000000[6-9]0.h5" >/dev/null && break
      sleep 0.1
    done
    [ -z "${3:-}" ] || host=$(grep -oP -m1 'worker 0/\d+ \(host \K\w+' "$3")
    date +%s.%N >"$2"
    "$SIM" down "$host" >/dev/null
    echo "$host" >>"$2"
  ) &
}
# epochs_audited LOG: how many of epochs 1..12 logged a passing audit.
epochs_audited() {
  grep -oP 'epoch \K[0-9]+(?=/12 batches: .*audit: all 6000 samples used exactly once)' "$1" | sort -un | wc -l
}

if [ "$slurm" -eq 1 ]; then
  # SLURM: slurm/train.sbatch on 3 of the 4 nodes (2 trainers, 1 worker); the worker's node is
  # lost. slurmctld declares it DOWN after SlurmdTimeout (20 s here), cancels the job "DUE TO
  # NODE FAILURE" and requeues it (--requeue); the next attempt runs on the 3 nodes that remain
  # (the spare among them) and resumes from the last checkpoint: same ranks, so the same digest
  # as an uninterrupted run.
  "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml "${LOSS[@]}" --set cluster.trainers=2 \
    --set "run.dir=$TMP/loss-ref" >"$TMP/loss-ref.log" 2>&1
  ref3=$(digest_of "$TMP/loss-ref.log")
  id=$(on_head sbatch --parsable -N 3 -n 3 --time=5 --output="$TMP/slurm-loss.out" \
    --export="ALL,CONFLUX_RUNS_DIR=$TMP/runs,CONFLUX_BIN=$(dirname "$CONFLUX")" slurm/train.sbatch \
    configs/mnist_mlp.toml --set cluster.trainers=2 "${LOSS[@]}")
  down_after_checkpoint "$TMP/runs/conflux-$id/checkpoints" "$TMP/slurm-loss.down" "$TMP/slurm-loss.out"
  downer=$!
  timeout 300 "$SIM" wait-job --timeout 240 "$id" >"$TMP/slurm-loss.wait" 2>&1
  rc=$?
  wait "$downer"
  lost=$(sed -n 2p "$TMP/slurm-loss.down")
  d=$(digest_of "$TMP/slurm-loss.out")
  epochs=$(epochs_audited "$TMP/slurm-loss.out")
  after=$(sed -n '/restart 1/,$p' "$TMP/slurm-loss.out")
  if [ "$rc" -eq 0 ] && [ -n "$lost" ] && grep -q "DUE TO NODE FAILURE" "$TMP/slurm-loss.out" &&
    grep -qE "resuming from .*written by 2 trainer\(s\) and 1 worker\(s\)" <<<"$after" &&
    ! grep -qE "\(host $lost," <<<"$after" && [ -n "$ref3" ] && [ "$d" = "$ref3" ] && [ "$epochs" -eq 12 ]; then
    ok "SLURM, worker node $lost lost mid-run: job requeued after the node failure, resumed on the other nodes; digest of an uninterrupted run, audit passed in all 12 epochs"
  else
    not_ok "SLURM node loss ($lost): wait-job exit $rc, digest '$d' (want '$ref3'), $epochs of 12 epochs audited" \
      "$(cat "$TMP/slurm-loss.wait" "$TMP/slurm-loss.out"; slurm_state)"
  fi
  "$SIM" up "$lost" >/dev/null 2>&1
fi

# mpirun: a trainer host is lost. mpirun must fail fast, and run-until-done's relaunch must run on
# the hosts that remain (hostfile-launch --drop-unreachable: 1 trainer instead of 2), resume from
# the last checkpoint that 2 trainers wrote, and finish with every epoch's audit passing.
down_after_checkpoint "$TMP/loss/checkpoints" "$TMP/loss.down"
downer=$!
on_head tools/run-until-done.sh --max-restarts 2 --delay 1 -- tools/hostfile-launch.sh --drop-unreachable \
  --bin "$CONFLUX" --config configs/mnist_mlp.toml --trainer-hosts h0,h1 --worker-hosts h2,h3 \
  -- "${LOSS[@]}" --resume auto --set "run.dir=$TMP/loss" >"$TMP/loss.log" 2>&1
rc=$?
wait "$downer"
# Seconds from the link going down to the relaunched job's first log line: failure detection,
# the relaunch delay and start-up, which must stay small (no wait without a deadline).
first=$(sed -n '/attempt 1 exited with/,$p' "$TMP/loss.log" | grep -oP -m1 '^\[conflux r[0-9]+ \K[0-9-]+ [0-9:.]+')
relaunch_s=$(awk -v a="$(date -d "${first:-1970-01-01}" +%s.%N)" -v b="$(head -1 "$TMP/loss.down" 2>/dev/null || echo 0)" \
  'BEGIN { printf "%.0f", a - b }')
epochs=$(epochs_audited "$TMP/loss.log")
if [ "$rc" -eq 0 ] && grep -q 'run-until-done: attempt 1 exited with' "$TMP/loss.log" &&
  grep -q 'run-until-done: attempt 2 succeeded' "$TMP/loss.log" &&
  grep -q 'dropping unreachable host h1 (ssh: connect to host h1 port 22: No route to host)' "$TMP/loss.log" &&
  grep -qE '^\[conflux r0 [^]]*\] trainer 0/1 \(host h0,' "$TMP/loss.log" &&
  grep -qE 'resuming from .*ckpt-[0-9]+\.h5: .*written by 2 trainer\(s\) and 2 worker\(s\)' "$TMP/loss.log" &&
  grep -qE '^\[conflux r0 [^]]*\] run .*: 1 trainer\(s\), 2 worker\(s\)' "$TMP/loss.log" &&
  [ "$epochs" -eq 12 ] && [ -n "$(digest_of "$TMP/loss.log")" ] && [ "$relaunch_s" -ge 0 ] && [ "$relaunch_s" -le 30 ]; then
  ok "losing trainer host h1 mid-run: the job failed and was relaunched within $relaunch_s s, without h1, resumed with 1 trainer; audit passed in all 12 epochs"
else
  not_ok "losing trainer host h1: exit $rc, relaunched after ${relaunch_s:-?} s, $epochs of 12 epochs audited" "$(cat "$TMP/loss.log")"
fi

echo "# multi-host suite: $((SECONDS - suite_start)) s"
cli_summary
