#!/usr/bin/env bash
# Reliability check: two stop signals in a row must still end the job with exit 75 (the code
# SLURM and slurm/lib/requeue.sh requeue on). TRIES runs (default 20) of configs/mnist_mlp.toml on
# 3 ranks; each gets SIGUSR1 sent to mpirun (which relays it to every rank), then a second
# SIGUSR1 to mpirun after a gap spread evenly over 0..200 ms, then, as SLURM does at a time
# limit, SIGTERM to every rank once rank 0 says it is exiting. Prints each try and the tally;
# exits 1 unless every try exited 75.
# Usage: benchmarks/double_signal.sh [TRIES]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
TRIES=${1:-20}
DATA=$CONFLUX_DATA
CONFLUX=${CONFLUX_BIN:-build/bin}/conflux
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
good=0
declare -A tally=()
for i in $(seq 0 $((TRIES - 1))); do
  gap=$(python3 -c "print(round(0.2 * $i / max(1, $TRIES - 1), 3))")
  log=$TMP/try-$i.log
  "${MPIRUN[@]}" -np 3 "$CONFLUX" train --config configs/mnist_mlp.toml \
    --set "data.dir=$DATA" --set data.train_limit=60000 --set train.epochs=2 --set train.log_every=0 \
    --set "run.dir=$TMP/run-$i" >"$log" 2>&1 &
  job=$!
  for _ in $(seq 1 200); do [ "$(grep -c ', pid [0-9]*,' "$log")" -ge 3 ] && break; sleep 0.1; done
  sleep 0.5
  mapfile -t pids < <(grep -oP ', pid \K[0-9]+' "$log")
  kill -USR1 "$job"
  sleep "$gap"
  kill -USR1 "$job" 2>/dev/null
  for _ in $(seq 1 1000); do grep -q "exiting with 75" "$log" && break; kill -0 "$job" 2>/dev/null || break; sleep 0.01; done
  kill -TERM "${pids[@]}" 2>/dev/null
  wait "$job"
  rc=$?
  tally[$rc]=$((${tally[$rc]:-0} + 1))
  [ "$rc" -eq 75 ] && good=$((good + 1))
  echo "try $((i + 1)): USR1 to mpirun, USR1 again after ${gap} s, TERM to the ranks at exit: exit $rc"
done
echo "exit codes: $(for k in "${!tally[@]}"; do printf '%s x%s  ' "$k" "${tally[$k]}"; done)"
echo "exit 75 in $good of $TRIES tries"
[ "$good" -eq "$TRIES" ]
