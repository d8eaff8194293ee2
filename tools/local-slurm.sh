#!/usr/bin/env bash
# A real, throw-away SLURM cluster on this machine (slurmctld + slurmd + munged, run as root)
# for the test suite and for trying the sbatch scripts (docs/launching.md describes it).
#
#   tools/local-slurm.sh install              # apt packages slurm-wlm and munge (once)
#   tools/local-slurm.sh start [--nodes N]    # write the config, start the daemons, wait idle
#   eval "$(tools/local-slurm.sh env)"        # SLURM_CONF for sbatch, srun, squeue, ...
#   tools/local-slurm.sh wait-job ID          # poll a job until it ends; exit = its exit code
#   tools/local-slurm.sh stop                 # cancel every job, stop the daemons
#
# Everything (config, state, logs, munge key and socket, PMIx temp dirs) lives under
# ROOT=${SLURM_CI_ROOT:-${TMPDIR:-/tmp}/local-slurm}; clients need SLURM_CONF=ROOT/etc/slurm.conf.
set -euo pipefail

ROOT=${SLURM_CI_ROOT:-${TMPDIR:-/tmp}/local-slurm}
export SLURM_CONF=$ROOT/etc/slurm.conf
NCPUS=${SLURM_CI_CPUS:-16}
CTLD_PORT=${SLURM_CI_PORT:-6817}
# Seconds before slurmctld declares a silent node DOWN (and requeues or ends its jobs).
SLURMD_TIMEOUT=${SLURM_CI_SLURMD_TIMEOUT:-300}
PROG=local-slurm

usage() {
  cat <<EOF
usage: tools/local-slurm.sh COMMAND [ARGS]
  install             install slurm-wlm and munge with tools/install-deps.sh (apt, root/sudo)
  start [--nodes N]   start munged, slurmctld and N slurmds (default \$SLURM_CI_NODES or 2) and
                      wait until every node is idle. N=1: one node "localhost"; N>=2: nodes
                      node0..node<N-1>, all on this host (separate ports, spool and TmpFS dirs),
                      so that heterogeneous jobs (one node per component) can run. Every node
                      advertises \$SLURM_CI_CPUS (default 16) CPUs; partition "debug" holds all
                      of them. A running cluster with the same node count is reused (exit 0).
  stop                cancel every job, stop the daemons started by "start"
  status              daemons, nodes and queue; exit 0 when the controller answers, else 1
  env                 print "export SLURM_CONF=..." (use: eval "\$(tools/local-slurm.sh env)")
  wait-job [--timeout S] [--srun-grace S [--tasks REGEX]] ID
                      poll "scontrol -o show job ID" every 0.5 s until the job (every component
                      or array task) has ended; prints "job ID STATE ExitCode=X:Y" per record
                      and exits with the job's exit code (128+signal when killed, 1 for a
                      non-COMPLETED job with exit code 0, 124 on timeout: the job is cancelled).
                      --srun-grace S: a job whose step has ended but whose batch script still
                      runs S s later is cancelled, exit 125 (srun hung after its tasks ended;
                      for scripts that end right after their srun). --tasks REGEX (pgrep -f)
                      matches the step's task processes: once they were seen and then none is
                      left for S s while the step is still listed, the same (srun hung too)
  -h, --help          this text
Files: root $ROOT (\$SLURM_CI_ROOT), logs in \$ROOT/log, slurmctld port $CTLD_PORT (\$SLURM_CI_PORT);
SlurmdTimeout $SLURMD_TIMEOUT s (\$SLURM_CI_SLURMD_TIMEOUT).
Requeue is fast: AuthInfo cred_expire=10 and sched_interval=1 give restarts ~12 s apart.
EOF
}

say() { echo "$PROG: $*"; }
die() {
  echo "$PROG: $*" >&2
  exit 1
}

need_root() { [ "$(id -u)" -eq 0 ] || die "the daemons run as root here; run as root (or adapt SlurmUser)"; }

need_tools() {
  local t missing=()
  for t in munged mungekey slurmctld slurmd scontrol sinfo squeue scancel sbatch; do
    command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || missing+=("$t")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: run 'tools/local-slurm.sh install' (slurm-wlm, munge)"
}

# Daemons live in /usr/sbin, which a non-login root shell may lack in PATH.
PATH=$PATH:/usr/sbin:/sbin

# Where the daemons run and what the config says about hosts. tools/sim-cluster.sh sources this
# file and replaces these five to run the same cluster on simulated hosts (network namespaces).
node_names() {  # node_names N: the node names of an N-node cluster
  local n=$1 i
  if [ "$n" -eq 1 ]; then echo localhost; return; fi
  for ((i = 0; i < n; i++)); do echo "node$i"; done
}
# node_conf_line INDEX NAME MEM: the NodeName= line of one node (all on this host: own ports).
node_conf_line() {
  echo "NodeName=$2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((CTLD_PORT + 1 + $1)) CPUs=$NCPUS RealMemory=$3 State=UNKNOWN"
}
CTLD_HOST=localhost
ctl() { "$@"; }           # ctl COMMAND...: runs slurmctld or a client where the controller is reachable
on_node() { "${@:2}"; } # on_node NAME COMMAND...: runs NAME's slurmd

controller_up() { ctl timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# The node count of the config on disk (0 when none).
conf_nodes() {
  local c=0
  if [ -f "$SLURM_CONF" ]; then c=$(grep -c '^NodeName=' "$SLURM_CONF" || true); fi
  echo "${c:-0}"
}

write_conf() {  # write_conf N
  local n=$1 mem i names
  mem=$(awk '/MemTotal/{print int($2/1024*0.9/'"$n"')}' /proc/meminfo)
  mapfile -t names < <(node_names "$n")
  {
    cat <<EOF
# Written by $PROG start: a throw-away test cluster, all daemons as root.
ClusterName=localci
SlurmctldHost=$CTLD_HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$ROOT/munge/munge.socket.2,cred_expire=10
StateSaveLocation=$ROOT/state
SlurmdSpoolDir=$ROOT/spool-%n
SlurmctldPidFile=$ROOT/run/slurmctld.pid
SlurmdPidFile=$ROOT/run/slurmd-%n.pid
SlurmctldLogFile=$ROOT/log/slurmctld.log
SlurmdLogFile=$ROOT/log/slurmd-%n.log
TmpFS=$ROOT/tmp-%n
SlurmctldPort=$CTLD_PORT
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmix
JobRequeue=1
ReturnToService=2
KillWait=5
SlurmdTimeout=$SLURMD_TIMEOUT
MinJobAge=300
MailProg=/bin/true
SlurmctldDebug=info
SlurmdDebug=info
EOF
    for i in "${!names[@]}"; do node_conf_line "$i" "${names[$i]}" "$mem"; done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$SLURM_CONF"
}

start_munge() {
  if pid_alive "$ROOT/munge/munged.pid"; then return 0; fi
  [ -s "$ROOT/munge/munge.key" ] || mungekey -c -k "$ROOT/munge/munge.key"
  chmod 600 "$ROOT/munge/munge.key"
  munged --key-file="$ROOT/munge/munge.key" --socket="$ROOT/munge/munge.socket.2" \
    --pid-file="$ROOT/munge/munged.pid" --log-file="$ROOT/munge/munged.log" \
    --seed-file="$ROOT/munge/munged.seed" --force 9>&-
}

wait_idle() {  # wait_idle N: every node idle (or mixed/allocated: in use is fine when reused)
  local n=$1 states i
  for i in $(seq 1 80); do
    states=$(ctl timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u) || states=""
    if [ "$(grep -cE ' (idle|mixed|allocated|completing)$' <<<"$states")" -ge "$n" ]; then return 0; fi
    [ "$i" -eq 40 ] && ctl timeout 10 scontrol update nodename=ALL state=resume 2>/dev/null
    sleep 0.25
  done
  echo "$PROG: nodes not idle after 20 s:" >&2
  ctl sinfo -N -l >&2 || true
  ctl sinfo -R >&2 || true
  tail -n 20 "$ROOT"/log/*.log >&2 || true
  return 1
}

cmd_start() {
  local n=${SLURM_CI_NODES:-2}
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) [ $# -ge 2 ] || die "--nodes needs a value"; n=$2; shift 2 ;;
      --nodes=*) n=${1#*=}; shift ;;
      -h | --help) usage; exit 0 ;;
      *) die "start: unknown option '$1' (see --help)" ;;
    esac
  done
  [[ $n =~ ^[1-9][0-9]?$ ]] || die "--nodes wants a number from 1 to 99, not '$n'"
  need_root
  need_tools
  # Reuse a running cluster of the same shape.
  if pid_alive "$ROOT/run/slurmctld.pid" && controller_up; then
    local have all_up=1 name
    have=$(conf_nodes)
    for name in $(node_names "$have"); do pid_alive "$ROOT/run/slurmd-$name.pid" || all_up=0; done
    if [ "$have" -eq "$n" ] && [ "$all_up" -eq 1 ]; then
      wait_idle "$n"
      say "reusing the running cluster ($n node(s), SLURM_CONF=$SLURM_CONF)"
      return 0
    fi
    if [ -n "$(ctl timeout 10 squeue -h 2>/dev/null)" ]; then
      die "a cluster with $have node(s) is running jobs; run 'tools/local-slurm.sh stop' first"
    fi
    say "restarting: the running cluster has $have node(s), $n wanted"
    cmd_stop
  fi
  # Stale daemons of a half-stopped cluster would hold the ports.
  stop_daemons
  mkdir -p "$ROOT"/{etc,state,log,run,munge}
  chmod 755 "$ROOT" "$ROOT/munge" # munged: the socket directory must be world-searchable
  # A fresh controller state: no jobs from an earlier (killed) cluster come back to life.
  rm -rf "${ROOT:?}/state" "$ROOT"/spool-* "$ROOT"/tmp-*
  mkdir -p "$ROOT/state"
  local name
  for name in $(node_names "$n"); do mkdir -p "$ROOT/spool-$name" "$ROOT/tmp-$name"; done
  start_munge
  write_conf "$n"
  # The daemons must not inherit the start/stop lock (fd 9).
  ctl slurmctld -c -i 9>&-
  for name in $(node_names "$n"); do on_node "$name" slurmd -N "$name" 9>&-; done
  local i
  for i in $(seq 1 40); do
    controller_up && break
    [ "$i" -eq 40 ] && { tail -n 30 "$ROOT/log/slurmctld.log" >&2; die "slurmctld does not answer"; }
    sleep 0.25
  done
  wait_idle "$n"
  say "up: $n node(s) ($(node_names "$n" | paste -sd, -)), $NCPUS CPUs each; export SLURM_CONF=$SLURM_CONF"
}

stop_daemons() {  # TERM slurmd(s), slurmctld (not munged), wait, then KILL what is left
  local f pids=()
  for f in "$ROOT"/run/slurmd-*.pid "$ROOT/run/slurmctld.pid"; do
    [ -s "$f" ] || continue
    pid_alive "$f" && pids+=("$(cat "$f")")
    rm -f "$f"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local i
  for i in $(seq 1 40); do
    kill -0 "${pids[@]}" 2>/dev/null || return 0
    sleep 0.25
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

cmd_stop() {
  if controller_up; then
    ctl timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    local i
    for i in $(seq 1 40); do
      [ -z "$(ctl timeout 10 squeue -h 2>/dev/null)" ] && break
      sleep 0.25
    done
  fi
  stop_daemons
  if pid_alive "$ROOT/munge/munged.pid"; then
    local pid
    pid=$(cat "$ROOT/munge/munged.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$ROOT/munge/munged.pid"
  say "stopped"
}

cmd_status() {
  local f name
  for f in "$ROOT/munge/munged.pid" "$ROOT/run/slurmctld.pid" "$ROOT"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    if pid_alive "$f"; then echo "$name: running (pid $(cat "$f"))"; else echo "$name: not running"; fi
  done
  if controller_up; then
    echo "SLURM_CONF=$SLURM_CONF"
    ctl sinfo -N -o '%N %P %T %c' || true
    ctl squeue || true
    return 0
  fi
  echo "$PROG: no controller answers (SLURM_CONF=$SLURM_CONF)"
  return 1
}

# srun_hung RECORDS: with --srun-grace, whether the job (scontrol -o records, all RUNNING) has
# had a step that ended $grace s ago, while its batch script still runs. Slurm 22.05's srun can
# hang after every task of a heterogeneous step has exited: it joins its PMIx abort-agent
# thread, which nobody told to stop (docs/cluster-tests.md). Uses stepped/stepless_since of the
# caller.
srun_hung() {
  local ids steps
  grep -q 'JobState=RUNNING' <<<"$1" && ! grep -qv 'JobState=RUNNING' <<<"$1" || return 1
  ids=$(grep -oP '^JobId=\K[0-9]+' <<<"$1" | paste -sd, -)
  steps=$(ctl timeout 15 squeue -h -s -j "$ids" -o %i 2>/dev/null) || return 1 # busy: unknown
  if [ "$(grep -v -e '\.batch$' -e '\.extern$' <<<"$steps" | grep -c .)" -gt 0 ]; then
    stepped=1
    # The hang's other form: the step stays listed although every task process has exited.
    if ! tasks_gone; then
      stepless_since=-1
      return 1
    fi
  fi
  [ "$stepped" -eq 1 ] || return 1
  [ "$stepless_since" -ge 0 ] || stepless_since=$SECONDS
  [ $((SECONDS - stepless_since)) -ge "$grace" ]
}

# tasks_gone: with --tasks, whether the step's task processes were seen running and none is
# left now (sets tasks_seen of the caller).
tasks_gone() {
  [ -n "$tasks" ] || return 1
  if pgrep -f -- "$tasks" >/dev/null 2>&1; then
    tasks_seen=1
    return 1
  fi
  [ "$tasks_seen" -eq 1 ]
}

# wait-job: every record (het component, array task) of the job must reach a final state.
cmd_wait_job() {
  local timeout=0 grace=0 tasks="" tasks_seen=0
  while [ $# -gt 0 ]; do
    case $1 in
      --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; timeout=$2; shift 2 ;;
      --timeout=*) timeout=${1#*=}; shift ;;
      --tasks) [ $# -ge 2 ] || die "--tasks needs a value"; tasks=$2; shift 2 ;;
      --tasks=*) tasks=${1#*=}; shift ;;
      --srun-grace) [ $# -ge 2 ] || die "--srun-grace needs a value"; grace=$2; shift 2 ;;
      --srun-grace=*) grace=${1#*=}; shift ;;
      -*) die "wait-job: unknown option '$1'" ;;
      *) break ;;
    esac
  done
  [ $# -eq 1 ] || die "usage: tools/local-slurm.sh wait-job [--timeout S] [--srun-grace S [--tasks REGEX]] JOBID"
  local id=$1 out line st busy deadline=0 misses=0 stepped=0 stepless_since=-1
  [[ $timeout =~ ^[0-9]+$ ]] || die "--timeout wants whole seconds"
  [[ $grace =~ ^[0-9]+$ ]] || die "--srun-grace wants whole seconds"
  [ "$timeout" -gt 0 ] && deadline=$((SECONDS + timeout))
  while :; do
    if ! out=$(ctl timeout 15 scontrol -o show job "$id" 2>&1); then
      misses=$((misses + 1))
      # The controller may be briefly busy; an unknown job id is final.
      if grep -q 'Invalid job id' <<<"$out" || [ "$misses" -ge 20 ]; then
        echo "$PROG: job $id: $out" >&2
        return 99
      fi
      sleep 0.5
      continue
    fi
    misses=0
    busy=0
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      st=$(grep -oP 'JobState=\K\S+' <<<"$line")
      case $st in
        PENDING | CONFIGURING | RUNNING | COMPLETING | REQUEUED | REQUEUE_HOLD | REQUEUE_FED | RESIZING | SUSPENDED | STAGE_OUT | SIGNALING | RESV_DEL_HOLD) busy=1 ;;
      esac
    done <<<"$out"
    [ "$busy" -eq 0 ] && break
    if [ "$grace" -gt 0 ] && srun_hung "$out"; then
      echo "$PROG: job $id: its job step (or every task of it) ended ${grace} s ago but the batch script still runs:" \
        "srun did not return (Slurm 22.05's mpi/pmix in heterogeneous steps, docs/cluster-tests.md);" \
        "cancelling it" >&2
      ctl timeout 15 scancel "$id" 2>/dev/null || true
      return 125
    fi
    if [ "$deadline" -gt 0 ] && [ "$SECONDS" -ge "$deadline" ]; then
      echo "$PROG: job $id still running after ${timeout} s: cancelling it" >&2
      ctl timeout 15 scancel "$id" 2>/dev/null || true
      return 124
    fi
    sleep 0.5
  done
  local rc=0 code sig jid
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    jid=$(grep -oP '^JobId=\K\S+' <<<"$line")
    st=$(grep -oP 'JobState=\K\S+' <<<"$line")
    code=$(grep -oP ' ExitCode=\K[0-9]+:[0-9]+' <<<"$line")
    echo "job $jid $st ExitCode=$code"
    sig=${code#*:}
    code=${code%%:*}
    if [ "$rc" -eq 0 ]; then
      if [ "$code" -ne 0 ]; then
        rc=$code
      elif [ "$sig" -ne 0 ]; then
        rc=$((128 + sig))
      elif [ "$st" != COMPLETED ]; then
        rc=1
      fi
    fi
  done <<<"$out"
  return "$rc"
}

# One start or stop at a time: a stop still running (e.g. the exit trap of a killed test) would
# otherwise kill the daemons a concurrent start has just launched.
serialised() {
  mkdir -p "$(dirname "$ROOT")"
  exec 9>"$ROOT.lock"
  flock 9
  "$@"
}

# Sourced (by tools/sim-cluster.sh): the functions only.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

case ${1:-} in
  install) shift; exec "$(dirname "$0")/install-deps.sh" slurm-wlm munge ;;
  start) shift; serialised cmd_start "$@" ;;
  stop) need_root; serialised cmd_stop ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$SLURM_CONF" ;;
  wait-job) shift; cmd_wait_job "$@" ;;
  -h | --help | help) usage ;;
  "") usage >&2; exit 2 ;;
  *) echo "$PROG: unknown command '$1'" >&2; usage >&2; exit 2 ;;
esac
