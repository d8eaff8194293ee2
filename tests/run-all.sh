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
passed=0
failed=0
failures=()

run() {  # run NAME COMMAND...
  local name=$1
  shift
  echo "=== $name: $*"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: passed ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

run unit "$BIN/conflux-unit-tests"
run mpi-np2 "${MPIRUN[@]}" -np 2 "$BIN/conflux-mpi-tests"
run mpi-np4 "${MPIRUN[@]}" -np 4 "$BIN/conflux-mpi-tests"
run cli tests/cli/cli-tests.sh

echo
[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
echo "test suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
