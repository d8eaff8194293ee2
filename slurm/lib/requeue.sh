# shellcheck shell=bash
# Checkpoint/requeue handling shared by slurm/train.sbatch, slurm/hetjob.sbatch and
# slurm/sweep.sbatch: sourced, not run. sbatch copies only the batch script itself, so the
# scripts source this file from the submit directory:
#   source "${CONFLUX_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}/slurm/lib/requeue.sh"
#
# The protocol, with "#SBATCH --signal=B:USR1@T --requeue --open-mode=append":
#   1. T seconds before the time limit Slurm sends SIGUSR1 to the batch shell only ("B:").
#   2. The trap below relays it to srun (kill -USR1), which relays it to every task.
#   3. conflux checkpoints at its next step boundary and every rank exits with 75.
#   4. srun exits 75; conflux_requeue_run calls "scontrol requeue $SLURM_JOB_ID". Slurm ends
#      this attempt ("CANCELLED ... DUE TO JOB REQUEUE") and starts the job again, with the
#      same job id and output file, SLURM_RESTART_COUNT=1, 2, ...
#   5. The next attempt runs conflux with --resume auto in the same run directory and carries on
#      from the newest valid checkpoint.
# A step that fails while the allocation lives on (a rank killed: under Open MPI, Slurm's
# mpi/pmix plugin then kills the whole step, docs/data-service.md "Losing a worker"; exit 3) is
# relaunched in the same allocation by tools/run-until-done.sh, at most $CONFLUX_STEP_RESTARTS
# times (default 3), and resumes from the newest checkpoint. Exit 0, 2 and 4, and any exit
# after a stop signal, are final.
# SIGTERM and SIGINT to the batch shell (scancel --batch --signal=TERM, a preemption) are relayed
# to srun as SIGUSR1 too: srun itself answers SIGTERM by cancelling the step, which would kill
# the ranks before they can checkpoint. A plain scancel still ends the job: conflux may
# checkpoint and exit 75, but the job is no longer RUNNING then, and the script does not
# requeue it (Slurm would: "scontrol requeue" revives even a cancelled job).

# conflux_banner [WHAT]: the first line of every attempt in the (appended) output file.
conflux_banner() {
  echo "conflux job ${SLURM_JOB_ID:-?} restart ${SLURM_RESTART_COUNT:-0}${1:+: $1}" \
    "($(date '+%Y-%m-%d %H:%M:%S'), $(hostname))"
}

# conflux_resume_args ARGS...: prints "--resume auto" (one word per line) unless ARGS already
# choose (--resume X, --resume=X or --set checkpoint.resume=X).
conflux_resume_args() {
  local a
  for a in "$@"; do
    case $a in --resume | --resume=* | checkpoint.resume=*) return 0 ;; esac
  done
  printf '%s\n' --resume auto
}

# conflux_srun_mpi BINARY: prints srun's --mpi= option for the MPI that BINARY was built with
# (its --version names it): Debian's Open MPI talks to SLURM through PMIx only (pmix), Debian's
# MPICH through the PMI-1 wire protocol that SLURM's pmi2 plugin also serves (pmi2).
# CONFLUX_SRUN_MPI overrides it, e.g. for an MPI built against other PMI libraries.
conflux_srun_mpi() {
  if [ -n "${CONFLUX_SRUN_MPI:-}" ]; then
    echo "--mpi=$CONFLUX_SRUN_MPI"
  elif "$1" --version 2>/dev/null | grep -q '^MPI *MPICH'; then
    echo "--mpi=pmi2"
  else
    echo "--mpi=pmix"
  fi
}

_conflux_child=""
_conflux_signal=""
_conflux_interrupted=0

_conflux_forward() {  # _conflux_forward SIG
  _conflux_interrupted=1
  _conflux_signal=$1
  if [ -n "$_conflux_child" ] && kill -0 "$_conflux_child" 2>/dev/null; then
    echo "conflux job ${SLURM_JOB_ID:-?}: got SIG$1; sending SIGUSR1 to srun (through" \
      "run-until-done, pid $_conflux_child): checkpoint and exit 75"
    kill -USR1 "$_conflux_child" 2>/dev/null || true
  else
    echo "conflux job ${SLURM_JOB_ID:-?}: got SIG$1"
  fi
}

# conflux_requeue_run COMMAND...: runs COMMAND (srun ...) in the background under
# tools/run-until-done.sh (which relaunches a failed step), relays USR1, TERM and INT to it as
# USR1, and waits for it. Exit 75 (checkpointed) requeues this job and ends the script; any
# other exit code is passed through (the script exits with it).
conflux_requeue_run() {
  local rc r
  local relaunch=${CONFLUX_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}/tools/run-until-done.sh
  trap '_conflux_forward USR1' USR1
  trap '_conflux_forward TERM' TERM
  trap '_conflux_forward INT' INT
  "$relaunch" --max-restarts "${CONFLUX_STEP_RESTARTS:-3}" --forward-as USR1 -- "$@" &
  _conflux_child=$!
  # wait returns early (status > 128) when a trapped signal arrives: wait again until the
  # command has really exited. A second wait on an already-collected child returns 127.
  _conflux_interrupted=0
  wait "$_conflux_child" && rc=0 || rc=$?
  while [ "$_conflux_interrupted" -eq 1 ]; do
    _conflux_interrupted=0
    wait "$_conflux_child" && r=0 || r=$?
    if [ "$r" -eq 127 ] && ! kill -0 "$_conflux_child" 2>/dev/null; then break; fi
    rc=$r
  done
  _conflux_child=""
  if [ "$rc" -ne 75 ]; then
    echo "conflux job ${SLURM_JOB_ID:-?}: exit code $rc${_conflux_signal:+ (after SIG$_conflux_signal)}"
    exit "$rc"
  fi
  # A job that is being cancelled (scancel sends SIGTERM to the tasks too) or has reached its
  # time limit must stay ended: Slurm would requeue even a cancelled job.
  local state
  state=$(scontrol -o show job "${SLURM_JOB_ID:-0}" 2>/dev/null | head -1 | grep -oP 'JobState=\K\S+')
  if [ "$state" != RUNNING ]; then
    echo "conflux job ${SLURM_JOB_ID:-?}: exiting with 75 (checkpointed${_conflux_signal:+ after SIG$_conflux_signal});" \
      "not requeueing: the job is ${state:-unknown} (cancelled or timed out); resubmit to resume"
    exit 75
  fi
  echo "conflux job ${SLURM_JOB_ID:-?}: exiting with 75 (checkpointed${_conflux_signal:+ after SIG$_conflux_signal});" \
    "scontrol requeue ${SLURM_JOB_ID:-?}"
  if [ -n "${SLURM_JOB_ID:-}" ] && scontrol requeue "$SLURM_JOB_ID"; then
    # Slurm now ends this attempt (the batch shell gets SIGTERM, then SIGKILL) and starts the
    # job again; the exit code of this attempt is not recorded.
    echo "conflux job $SLURM_JOB_ID: requeued; the next attempt resumes from the checkpoint"
    trap - USR1 TERM INT
    exit 0
  fi
  echo "conflux job ${SLURM_JOB_ID:-?}: requeue failed (job cancelled, --no-requeue, or" \
    "JobRequeue=0): resubmit it to resume from the checkpoint" >&2
  exit 75
}
