#!/usr/bin/env bash
# Runs every test: GoogleTest units, MPI integration tests under mpirun -np 2 and -np 4, and
# the command-line tests, against the build in $CONFLUX_BIN (default build/bin) with the MPI it
# was built with (tools/mpi-env.sh). With $CONFLUX_OTHER_MPI_BIN (a build with the other MPI,
# e.g. build/release-cpu-mpich/bin), the MPI-dependent suites run again against that build,
# named "<suite>@<mpi>". --mpi-only runs only the MPI-dependent suites. Prints
# "N passed, M failed, K skipped" (a skip is a suite's "skip - why" line; the suites that had
# any are listed) and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3
mpi_only=0
[ "${1:-}" = --mpi-only ] && mpi_only=1
BIN=${CONFLUX_BIN:-build/bin}
export CONFLUX_BIN=$BIN
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
echo "tests: data from CONFLUX_DATA=$CONFLUX_DATA"
# For BUILD=asan: leaks inside MPI/BLAS/HDF5 libraries are theirs (see tests/lsan.supp).
# Full (slow) unwinding and no plugin unloading (tools/mpi-env.sh) let every leak stack name
# its library.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"
# Undefined behaviour fails the run instead of scrolling past.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
passed=0
failed=0
tests_passed=0
tests_failed=0
tests_skipped=0
failures=()
skips=()
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
  local k
  k=$(grep -c '^skip - ' "$log")
  if [ "$k" -gt 0 ]; then
    tests_skipped=$((tests_skipped + k))
    skips+=("$name ($k)")
  fi
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "=== $name: passed ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

# The suites that start MPI jobs, for the build in $CONFLUX_BIN with MPI $CONFLUX_MPI; SUFFIX
# names them. MPI runs are under `timeout` (lib.sh), so a hang fails instead of stalling.
run_mpi_suites() {  # run_mpi_suites SUFFIX
  local s=$1
  run "mpi-np2$s" timeout 600 "${MPIRUN[@]}" -np 2 "$CONFLUX_BIN/conflux-mpi-tests" --gtest_color=no
  run "mpi-np4$s" timeout 600 "${MPIRUN[@]}" -np 4 "$CONFLUX_BIN/conflux-mpi-tests" --gtest_color=no
  run "cli$s" tests/cli/cli-tests.sh
  run "cli-data-service$s" tests/cli/data-service-tests.sh
  run "cli-byod$s" tests/cli/byod-tests.sh
  run "cli-launch$s" tests/cli/launch-tests.sh
  run "cli-checkpoint$s" tests/cli/checkpoint-tests.sh
  run "cli-profile$s" tests/cli/profile-tests.sh
  run "cli-report$s" tests/cli/report-tests.sh
  run "cli-restart$s" tests/cli/restart-tests.sh
  run "cli-kreduce$s" tests/cli/kreduce-tests.sh
  run "cli-gpu$s" tests/cli/gpu-tests.sh
  run "cli-plan$s" tests/cli/plan-tests.sh
  run "cli-watch$s" tests/cli/watch-tests.sh
  run "cli-slurm$s" tests/cli/slurm-tests.sh
  run "cli-cluster$s" tests/cli/cluster-tests.sh
}

if [ "$mpi_only" -eq 0 ]; then
  run layering tools/check-layering.sh
  run unit "$BIN/conflux-unit-tests" --gtest_color=no
  run bench-unit "$BIN/conflux-bench-tests" --gtest_color=no
  run cli-image-data tests/cli/image-data-tests.sh
  # Single-process conflux runs only, so once, not again under the other MPI.
  run cli-export tests/cli/export-tests.sh
  run cli-portable tests/cli/portable-tests.sh
  run cli-torch tests/cli/torch-tests.sh
  # TensorBoard, ONNX Runtime and h5py on conflux's files (build/venv from make test-deps).
  run cli-clients tests/cli/clients-tests.sh
  # Graph models change nothing MPI-specific beyond what the suites below cover: once.
  run cli-graph tests/cli/graph-tests.sh
  run cli-gpu-input-smoke tests/cli/gpu-input-smoke-tests.sh
  run cli-trainer-step tests/cli/trainer-step-tests.sh
fi
run_mpi_suites ""
if [ "$mpi_only" -eq 0 ]; then
  run cli-install tests/cli/install-tests.sh
fi
if [ -n "${CONFLUX_OTHER_MPI_BIN:-}" ]; then
  # The same suites against the other MPI's build, with that MPI's launcher.
  export CONFLUX_BIN=$CONFLUX_OTHER_MPI_BIN
  unset CONFLUX_MPI
  # shellcheck source=tools/mpi-env.sh
  source tools/mpi-env.sh
  echo "=== the MPI-dependent suites again: $CONFLUX_BIN ($CONFLUX_MPI)"
  run_mpi_suites "@$CONFLUX_MPI"
fi

echo
[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
[ ${#skips[@]} -gt 0 ] && echo "suites with skipped tests: ${skips[*]}"
echo "suites: $passed passed, $failed failed"
# Counts each test once per run (the MPI suite runs at 2 and at 4 ranks).
echo "tests: $tests_passed passed, $tests_failed failed, $tests_skipped skipped"
[ "$failed" -eq 0 ]
