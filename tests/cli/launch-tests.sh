#!/usr/bin/env bash
# Launch-layout tests: tools/hostfile-launch.sh builds one mpirun with the trainers' app context
# first (world ranks 0..T-1 train, the rest are workers) and runs it on localhost; and
# slurm/hetjob.sbatch runs trainers and workers as the two components of a heterogeneous SLURM
# job, on the simulated cluster of tools/sim-cluster.sh (started here, stopped at exit): the
# trainer component on h0,h1, the worker component on h2,h3, the digest of a one-host run.
# Where that cluster cannot run (not root, no namespaces, no SLURM, an MPICH build), the hetjob
# runs on a SLURM cluster that is up already (SLURM_CONF, else tools/local-slurm.sh's config)
# with two idle nodes, else prints "ok ... (skipped: REASON)".
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
QUICK+=(--set train.epochs=1)
digest_in() { sed -n 's/^model digest: //p' <<<"$1"; }

export CONFLUX_MPIRUN=mpirun
LAUNCH=(tools/hostfile-launch.sh --bin "$CONFLUX" --config configs/mnist_mlp.toml)

# --- the mpirun command tools/hostfile-launch.sh builds ----------------------------------------
# In an environment with one OpenBLAS setting (whatever this machine sets): it is forwarded.
mapfile -t unset_blas < <(compgen -e | grep -E '^(OPENBLAS_|CONFLUX_BLAS_PIN$)' | sed 's/^/-u/')
out=$(env "${unset_blas[@]}" OPENBLAS_CORETYPE=Haswell "${LAUNCH[@]}" --trainer-hosts gpu1,gpu2 \
  --worker-hosts cpu1:4,cpu2:4 -t 4 -w 8 --dry-run -- --set train.epochs=1 2>&1)
app="$CONFLUX train --config configs/mnist_mlp.toml --set cluster.trainers=4 --set cluster.workers=8 --set train.epochs=1"
env="-x OPENBLAS_NUM_THREADS -x OPENBLAS_CORETYPE -x CONFLUX_DATA"
want="mpirun -np 4 --host gpu1:2,gpu2:2 $env $app : -np 8 --host cpu1:4,cpu2:4 $env $app"
if [ "$out" = "$want" ]; then ok "dry run: trainer app context first (gpu1:2,gpu2:2), then workers (cpu1:4,cpu2:4), each with its -x (OpenBLAS settings, CONFLUX_DATA)"; else not_ok "dry run: got '$out', want '$want'"; fi

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

# --- slurm/hetjob.sbatch: trainer component on some nodes, worker component on others -----------
# On the simulated cluster (tools/sim-cluster.sh: 2 trainers on h0,h1, 2 workers on h2,h3),
# started here and stopped at exit; where it cannot run, on a SLURM cluster that is already up
# with two idle nodes (1 trainer, 1 worker), else skipped with the reason.
SIM=tools/sim-cluster.sh
slurm_skip() { ok "hetjob.sbatch under SLURM (skipped: $1)"; }
sim_why=""
if [ "$CONFLUX_MPI" != openmpi ]; then
  sim_why="the simulated cluster runs Open MPI builds; this one uses $CONFLUX_MPI"
elif ! sim_why=$("$SIM" check); then
  sim_why=${sim_why#sim-cluster: }
elif ! command -v slurmctld >/dev/null && [ ! -x /usr/sbin/slurmctld ]; then
  sim_why="no slurmctld (make test-deps installs slurm-wlm and munge)"
else
  sim_why=""
fi
het=""  # where the job goes: "sim" or "external"
if [ ! -d "$DATA/mnist" ]; then
  slurm_skip "$DATA/mnist not found"
elif [ -z "$sim_why" ]; then
  export SIM_CLUSTER_ROOT=$TMP/cluster
  trap '"$SIM" stop >/dev/null 2>&1; rm -rf "$TMP"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if out=$(timeout 120 "$SIM" start --owner $$ 2>&1); then
    het=sim
    on_ctl() { timeout 60 "$SIM" exec head "$@"; }
    WAIT_JOB=("$SIM" wait-job)
    # Component 0: 2 trainers on h0,h1; component 1: 2 workers on h2,h3.
    C0=(-w "h0,h1" -n2 --ntasks-per-node=1)
    C1=(-w "h2,h3" -n2 --ntasks-per-node=1)
    trainers=2 workers=2 want_nodes="2 trainer(s) on h[0-1], 2 worker(s) on h[2-3]"
    want_roles=("r0 trainer 0/2 h0" "r1 trainer 1/2 h1" "r2 worker 0/2 h2" "r3 worker 1/2 h3")
  else
    not_ok "tools/sim-cluster.sh start" "$out"
  fi
else
  # No simulated cluster: a cluster that is already up (SLURM_CONF, else tools/local-slurm.sh's).
  if [ -z "${SLURM_CONF:-}" ] && [ -f "${TMPDIR:-/tmp}/local-slurm/etc/slurm.conf" ]; then
    export SLURM_CONF="${TMPDIR:-/tmp}/local-slurm/etc/slurm.conf"
  fi
  if ! command -v sbatch >/dev/null || ! command -v scontrol >/dev/null || ! command -v sinfo >/dev/null; then
    slurm_skip "$sim_why; no SLURM client commands"
  elif ! timeout 15 scontrol ping 2>/dev/null | grep -q 'is UP'; then
    slurm_skip "$sim_why; no SLURM controller answers scontrol ping${SLURM_CONF:+ (SLURM_CONF=$SLURM_CONF)}"
  else
    # Two different idle nodes, each with a partition it belongs to.
    mapfile -t idle < <(timeout 15 sinfo -h -N -t idle -o '%N %P' | tr -d '*' | sort -u -k1,1)
    if [ "${#idle[@]}" -lt 2 ]; then
      slurm_skip "$sim_why; ${#idle[@]} idle node(s); Slurm needs one node per heterogeneous job component"
    else
      het=external
      on_ctl() { timeout 60 "$@"; }
      WAIT_JOB=(tools/local-slurm.sh wait-job)
      read -r node0 part0 <<<"${idle[0]}"
      read -r node1 part1 <<<"${idle[1]}"
      C0=(-p "$part0" -w "$node0" -n1)
      C1=(-p "$part1" -w "$node1" -n1)
      trainers=1 workers=1 want_nodes="1 trainer(s) on $node0, 1 worker(s) on $node1"
      want_roles=("r0 trainer 0/1 [^,]*" "r1 worker 0/1 [^,]*")
      # Two slurmds on one machine (a test cluster): tools/mpi-env.sh says what the MPI needs.
      host0=$(scontrol -o show node "$node0" | grep -oP 'NodeHostName=\K\S+')
      host1=$(scontrol -o show node "$node1" | grep -oP 'NodeHostName=\K\S+')
      if [ "$host0" = "$host1" ]; then
        mapfile -t one_host < <(mpi_one_host_cluster_env)
        for kv in ${one_host[@]+"${one_host[@]}"}; do export "${kv?}"; done
      fi
    fi
  fi
fi
if [ -n "$het" ]; then
  # The job's files must be visible from the nodes: use the repository, not /tmp.
  mkdir -p build
  jobdir=$(mktemp -d "$PWD/build/launch-test.XXXXXX") || exit 3
  [ "$het" = sim ] && trap '"$SIM" stop >/dev/null 2>&1; rm -rf "$TMP" "$jobdir"' EXIT
  [ "$het" = external ] && trap 'rm -rf "$TMP" "$jobdir"' EXIT
  id=$(on_ctl sbatch --parsable "${C0[@]}" --time=3 -o "$jobdir/het-%j.out" : "${C1[@]}" --time=3 \
    slurm/hetjob.sbatch configs/mnist_mlp.toml "${QUICK[@]}" --set "run.dir=$jobdir/run" 2>&1)
  # The one-host reference with the same trainer and worker counts, while the job runs.
  "${MPIRUN[@]}" -np $((trainers + workers)) "$CONFLUX" train --config configs/mnist_mlp.toml "${QUICK[@]}" \
    --set "cluster.trainers=$trainers" --set "run.dir=$TMP/het-ref" >"$TMP/het-ref.log" 2>&1
  ref=$(digest_of "$TMP/het-ref.log")
  if ! [[ $id =~ ^[0-9]+$ ]]; then
    not_ok "sbatch slurm/hetjob.sbatch" "$id"
  else
    # --srun-grace: Slurm 22.05's srun may hang after every task of a heterogeneous step has
    # exited (docs/cluster-tests.md); wait-job then cancels the job after 30 s (exit 125).
    final=$("${WAIT_JOB[@]}" --timeout 180 --srun-grace 30 \
      --tasks "^[^ ]*conflux train .*run\.dir=$jobdir/run" "$id" 2>&1)
    rc=$?
    log=$(cat "$jobdir/het-$id.out" 2>/dev/null)
    missing=""
    for spec in "${want_roles[@]}"; do
      read -r r role idx host <<<"$spec"
      grep -qE "^\[conflux $r [^]]*\] $role $idx \(host $host, " <<<"$log" || missing+="$spec; "
    done
    trained=0
    grep -qF "hetjob: $want_nodes" <<<"$log" && [ -z "$missing" ] && [ -n "$ref" ] &&
      [ "$(digest_in "$log")" = "$ref" ] && trained=1
    if [ "$trained" -eq 1 ] && [ "$rc" -eq 0 ] && [ "$(grep -c 'COMPLETED ExitCode=0:0' <<<"$final")" -eq 2 ]; then
      ok "hetjob.sbatch ($het cluster): $want_nodes, roles on their hosts, COMPLETED, one-host mpirun digest"
    elif [ "$trained" -eq 1 ] && [ "$rc" -eq 125 ] && grep -q 'srun did not return' <<<"$final"; then
      ok "hetjob.sbatch ($het cluster): $want_nodes, roles on their hosts, one-host mpirun digest; then srun hung after every task had exited (Slurm 22.05, docs/cluster-tests.md): cancelled"
    else
      not_ok "hetjob.sbatch job $id ($het cluster): wait-job exit $rc ($final), digest '$(digest_in "$log")' (want '$ref'), missing roles: ${missing:-none}" "$log"
    fi
  fi
fi

cli_summary
