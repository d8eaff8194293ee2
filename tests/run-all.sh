#!/usr/bin/env bash
# Runs every test: GoogleTest units, MPI integration tests under mpirun -np 2 and -np 4, and
# the command-line tests. Prints "N passed, M failed" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
BIN=${CONFLUX_BIN:-build/bin}
export CONFLUX_BIN=$BIN
# For BUILD=asan: leaks inside MPI/BLAS/HDF5 libraries are theirs (see tests/lsan.supp).
# Full (slow) unwinding and no plugin unloading let every leak stack name its library.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"
export OMPI_MCA_mca_base_component_disable_dlclose=1
# Undefined behaviour fails the run instead of scrolling past.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
passed=0
failed=0
tests_passed=0
tests_failed=0
failures=()
LOGDIR=$(mktemp -d)
trap 'rm -rf "$LOGDIR"' EXIT

run() {  # run NAME COMMAND...
  local name=$1
  shift
  echo "=== $name: $*"
  local start=$SECONDS log="$LOGDIR/$name.log"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  # Individual test counts: GoogleTest's summary lines, or the CLI script's "N passed, M failed".
  local p f
  p=$(grep -oP '^\[  PASSED  \] \K[0-9]+(?= tests?)' "$log" | head -1)
  f=$(grep -oP '^\[  FAILED  \] \K[0-9]+(?= tests?, listed)' "$log" | head -1)
  if grep -qP '^cli: [0-9]+ passed' "$log"; then
    p=$(grep -oP '^cli: \K[0-9]+(?= passed)' "$log")
    f=$(grep -oP '^cli: [0-9]+ passed, \K[0-9]+' "$log")
  fi
  tests_passed=$((tests_passed + ${p:-0}))
  tests_failed=$((tests_failed + ${f:-0}))
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "=== $name: passed ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

run layering tools/check-layering.sh
run unit "$BIN/conflux-unit-tests" --gtest_color=no
run mpi-np2 "${MPIRUN[@]}" -np 2 "$BIN/conflux-mpi-tests" --gtest_color=no
run mpi-np4 "${MPIRUN[@]}" -np 4 "$BIN/conflux-mpi-tests" --gtest_color=no
run cli tests/cli/cli-tests.sh
run cli-data-service tests/cli/data-service-tests.sh
run cli-launch tests/cli/launch-tests.sh
run cli-checkpoint tests/cli/checkpoint-tests.sh
run cli-profile tests/cli/profile-tests.sh
run cli-report tests/cli/report-tests.sh
run cli-restart tests/cli/restart-tests.sh
run cli-kreduce tests/cli/kreduce-tests.sh
run cli-gpu tests/cli/gpu-tests.sh
run cli-plan tests/cli/plan-tests.sh
run cli-watch tests/cli/watch-tests.sh
run cli-slurm tests/cli/slurm-tests.sh

echo
[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
# Counts each test once per run (the MPI suite runs at 2 and at 4 ranks).
echo "tests: $tests_passed passed, $tests_failed failed"
[ "$failed" -eq 0 ]
