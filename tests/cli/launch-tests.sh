#!/usr/bin/env bash
# Launch-layout tests: tools/hostfile-launch.sh builds one mpirun with the trainers' app context
# first (world ranks 0..T-1 train, the rest are workers) and runs it on localhost; and
# slurm/hetjob.sbatch runs trainers and workers as the two components of a heterogeneous SLURM
# job. The SLURM part starts no cluster: it runs only when `scontrol ping` reaches a controller
# (SLURM_CONF, else the local-slurm recipe's ${TMPDIR:-/tmp}/local-slurm/etc/slurm.conf) that
# has two idle nodes, because Slurm never starts a heterogeneous job on a single node; otherwise
# it prints "ok ... (skipped: ...)".
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
QUICK+=(--set train.epochs=1)
digest_in() { sed -n 's/^model digest: //p' <<<"$1"; }

export CONFLUX_MPIRUN=mpirun
LAUNCH=(tools/hostfile-launch.sh --bin "$CONFLUX" --config configs/mnist_mlp.toml)

# --- the mpirun command tools/hostfile-launch.sh builds ----------------------------------------
out=$("${LAUNCH[@]}" --trainer-hosts gpu1,gpu2 --worker-hosts cpu1:4,cpu2:4 -t 4 -w 8 --dry-run -- --set train.epochs=1 2>&1)
app="$CONFLUX train --config configs/mnist_mlp.toml --set cluster.trainers=4 --set cluster.workers=8 --set train.epochs=1"
env="-x OPENBLAS_NUM_THREADS -x CONFLUX_DATA"
want="mpirun -np 4 --host gpu1:2,gpu2:2 $env $app : -np 8 --host cpu1:4,cpu2:4 $env $app"
if [ "$out" = "$want" ]; then ok "dry run: trainer app context first (gpu1:2,gpu2:2), then workers (cpu1:4,cpu2:4), each with its -x"; else not_ok "dry run: got '$out', want '$want'"; fi

out=$("${LAUNCH[@]}" --trainer-hosts localhost --worker-hosts localhost -t 1 -w 1 --dry-run 2>&1)
if [ "$(grep -o -- '--host localhost:2 ' <<<"$out" | wc -l)" -eq 2 ] && grep -qF -- "--set cluster.trainers=1 --set cluster.workers=1 : -np 1" <<<"$out"; then
  ok "dry run: a host in both lists gets the summed slots in both app contexts"
else
  not_ok "dry run with a shared host" "$out"
fi

printf '# trainer nodes\ngpu1 slots=2\ngpu2 slots=2 max_slots=4\n\n' >"$TMP/gpus"
out=$("${LAUNCH[@]}" --trainer-hosts "@$TMP/gpus" --worker-hosts cpu1 -w 3 --dry-run 2>&1)
if grep -qF -- "-np 4 --host gpu1:2,gpu2:2 " <<<"$out" && grep -qF -- ": -np 3 --host cpu1:3 " <<<"$out" &&
  grep -qF -- "--set cluster.trainers=4 --set cluster.workers=3" <<<"$out"; then
  ok "dry run: @hostfile slots give the trainer count"
else
  not_ok "dry run with a hostfile" "$out"
fi

out=$("${LAUNCH[@]}" --trainer-hosts gpu1:2 --worker-hosts cpu1 -t 3 -w 1 --dry-run 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && grep -qF "3 trainer rank(s) but only 2 slot(s)" <<<"$out"; then ok "more trainers than slots: exit 2"; else not_ok "too few slots: exit $rc" "$out"; fi

# --- real runs on localhost: world rank 0 trains, rank 1 is the worker --------------------------
# Every launch runs under a time limit: a hang fails the test instead of blocking the suite.
# tools/hostfile-launch.sh builds Open MPI's mpirun (per-app-context --host slots, -x):
# docs/launching.md, "MPI implementations".
if [ "$CONFLUX_MPI" != openmpi ]; then
  ok "hostfile-launch runs (skipped: tools/hostfile-launch.sh is Open MPI-only, this build uses $CONFLUX_MPI)"
elif [ -d "$DATA/mnist" ]; then
  # The Open MPI launcher of tools/mpi-env.sh (mpirun.openmpi when MPICH is installed too).
  export CONFLUX_MPIRUN=$MPI_LAUNCHER
  check_run() {  # check_run NAME LOG RC
    if [ "$3" -eq 0 ] && grep -q '^\[conflux r0 [^]]*\] trainer 0/1 ' <<<"$2" && grep -q '^\[conflux r1 [^]]*\] worker 0/1 ' <<<"$2" &&
      grep -q '1 trainer(s), 1 worker(s)' <<<"$2" && [ -n "$(digest_in "$2")" ]; then
      ok "$1: rank 0 trainer, rank 1 worker, digest $(digest_in "$2")"
    else
      not_ok "$1: exit $3" "$2"
    fi
  }
  log1=$(timeout 120 "${LAUNCH[@]}" --trainer-hosts localhost --worker-hosts localhost -t 1 -w 1 --oversubscribe \
    -- "${QUICK[@]}" --set "run.dir=$TMP/run-host1" 2>&1)
  check_run "hostfile-launch on localhost (--oversubscribe)" "$log1" $?
  log2=$(timeout 120 "${LAUNCH[@]}" --trainer-hosts localhost --worker-hosts localhost -t 1 -w 1 \
    --mpirun-arg --bind-to --mpirun-arg none -- "${QUICK[@]}" --set "run.dir=$TMP/run-host2" 2>&1)
  check_run "hostfile-launch on localhost (summed slots, no --oversubscribe)" "$log2" $?
  if [ -n "$(digest_in "$log1")" ] && [ "$(digest_in "$log1")" = "$(digest_in "$log2")" ]; then ok "both launches give the same digest"; else not_ok "digests differ: '$(digest_in "$log1")' '$(digest_in "$log2")'"; fi
else
  ok "hostfile-launch runs (skipped: $DATA/mnist not found)"
fi

# --- slurm/hetjob.sbatch on a running SLURM cluster ---------------------------------------------
slurm_skip() { ok "hetjob.sbatch under SLURM (skipped: $1)"; }
if [ -z "${SLURM_CONF:-}" ] && [ -f "${TMPDIR:-/tmp}/local-slurm/etc/slurm.conf" ]; then
  export SLURM_CONF="${TMPDIR:-/tmp}/local-slurm/etc/slurm.conf"
fi
if ! command -v sbatch >/dev/null || ! command -v scontrol >/dev/null || ! command -v sinfo >/dev/null; then
  slurm_skip "no SLURM client commands"
elif [ -n "${SLURM_CONF:-}" ] && [ ! -f "$SLURM_CONF" ]; then
  slurm_skip "SLURM_CONF=$SLURM_CONF does not exist"
elif [ -z "${SLURM_CONF:-}" ] && [ ! -f /etc/slurm/slurm.conf ] && [ ! -f /run/slurm/conf/slurm.conf ]; then
  slurm_skip "no SLURM config (set SLURM_CONF)"
elif ! timeout 15 scontrol ping 2>/dev/null | grep -q 'is UP'; then
  slurm_skip "no SLURM controller answers scontrol ping${SLURM_CONF:+ (SLURM_CONF=$SLURM_CONF)}"
elif [ ! -d "$DATA/mnist" ]; then
  slurm_skip "$DATA/mnist not found"
else
  # Two different idle nodes, each with a partition it belongs to.
  mapfile -t idle < <(timeout 15 sinfo -h -N -t idle -o '%N %P' | tr -d '*' | sort -u -k1,1)
  if [ "${#idle[@]}" -lt 2 ]; then
    if out=$(timeout 30 sbatch --test-only -n1 : -n1 slurm/hetjob.sbatch 2>&1) && grep -q 'to start at' <<<"$out"; then
      ok "sbatch --test-only accepts slurm/hetjob.sbatch"
    else
      not_ok "sbatch --test-only slurm/hetjob.sbatch" "$out"
    fi
    slurm_skip "${#idle[@]} idle node(s); Slurm needs one node per heterogeneous job component"
  else
    read -r node0 part0 <<<"${idle[0]}"
    read -r node1 part1 <<<"${idle[1]}"
    # The job's files must be visible from the nodes: use the repository, not /tmp.
    mkdir -p build
    jobdir=$(mktemp -d "$PWD/build/launch-test.XXXXXX") || exit 3
    trap 'rm -rf "$TMP" "$jobdir"' EXIT
    host0=$(scontrol -o show node "$node0" | grep -oP 'NodeHostName=\K\S+')
    host1=$(scontrol -o show node "$node1" | grep -oP 'NodeHostName=\K\S+')
    # Two slurmds on one machine (a test cluster): tools/mpi-env.sh says what the MPI needs.
    if [ "$host0" = "$host1" ]; then
      mapfile -t one_host < <(mpi_one_host_cluster_env)
      for kv in ${one_host[@]+"${one_host[@]}"}; do export "${kv?}"; done
    fi
    id=$(timeout 30 sbatch --parsable -p "$part0" -w "$node0" -n1 --time=3 -o "$jobdir/het-%j.out" \
      : -p "$part1" -w "$node1" -n1 --time=3 \
      slurm/hetjob.sbatch configs/mnist_mlp.toml "${QUICK[@]}" --set "run.dir=$jobdir/run" 2>&1)
    if ! [[ $id =~ ^[0-9]+$ ]]; then
      not_ok "sbatch slurm/hetjob.sbatch" "$id"
    else
      # Poll (sbatch --wait polls every 32 s); give up and cancel after 180 s.
      state=""
      for _ in $(seq 1 360); do
        line=$(timeout 15 scontrol -o show job "$id" 2>/dev/null | head -1)
        state=$(grep -oP 'JobState=\K\S+' <<<"$line")
        case $state in PENDING | CONFIGURING | RUNNING | COMPLETING | REQUEUED) sleep 0.5 ;; *) break ;; esac
      done
      case $state in PENDING | CONFIGURING | RUNNING | COMPLETING | REQUEUED) timeout 15 scancel "$id" ;; esac
      code=$(grep -oP ' ExitCode=\K\S+' <<<"$line")
      log=$(cat "$jobdir/het-$id.out" 2>/dev/null)
      if [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] && grep -qF "hetjob: 1 trainer(s) on $node0, 1 worker(s) on $node1" <<<"$log" &&
        grep -q '^\[conflux r0 [^]]*\] trainer 0/1 ' <<<"$log" && grep -q '^\[conflux r1 [^]]*\] worker 0/1 ' <<<"$log" &&
        [ -n "$(digest_in "$log")" ]; then
        ok "hetjob.sbatch: trainer on $node0 (rank 0), worker on $node1 (rank 1), digest $(digest_in "$log")"
      else
        not_ok "hetjob.sbatch job $id: state '$state', exit code '$code'" "$log"
      fi
      if [ -d "$DATA/mnist" ] && [ -n "${log1:-}" ]; then
        if [ "$(digest_in "$log")" = "$(digest_in "$log1")" ]; then ok "hetjob digest equals the mpirun digest"; else not_ok "hetjob digest '$(digest_in "$log")' != mpirun digest '$(digest_in "$log1")'"; fi
      fi
    fi
  fi
fi

cli_summary
