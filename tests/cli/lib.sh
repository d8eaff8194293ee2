# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this
# Shared setup of the command-line test scripts: sourced, not run. Provides $CONFLUX, $DATA
# (exported as CONFLUX_DATA: conflux never looks in the working directory), a $TMP directory
# removed on exit, the MPIRUN array (under a time limit) with tools/mpi-env.sh's helpers for
# the MPI of the build, and the ok / not_ok / expect_fail / digest_of helpers; each script ends
# with `cli_summary`.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 3
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
CONFLUX=${CONFLUX_BIN:-build/bin}/conflux
DATA=$CONFLUX_DATA
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
QUICK=(--set data.train_limit=1000 --set data.test_limit=200 --set train.log_every=0)

ok() { pass=$((pass + 1)); echo "ok   - $1"; }
not_ok() {
  fail=$((fail + 1))
  echo "FAIL - $1"
  if [ -n "${2:-}" ]; then tail -15 <<<"$2" | while IFS= read -r line; do echo "       $line"; done; fi
}

# expect_fail NAME EXIT_CODE "TEXT" [MIN_LINES] -- COMMAND...: the command exits with EXIT_CODE
# and its output contains TEXT (at least MIN_LINES times: once per rank).
expect_fail() {
  local name=$1 code=$2 text=$3 min=1
  shift 3
  if [ "$1" != "--" ]; then min=$1; shift; fi
  shift
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  local count
  count=$(grep -cF -- "$text" <<<"$out")
  if [ "$rc" -eq "$code" ] && [ "$count" -ge "$min" ]; then
    ok "$name (exit $rc)"
  else
    not_ok "$name: exit $rc (want $code), '$text' seen $count time(s) (want >= $min)" "$out"
  fi
}

# Every mpirun runs under a time limit: a hang fails the test instead of blocking the suite.
MPIRUN=(timeout 120 "${MPIRUN[@]}")

digest_of() { sed -n 's/^model digest: //p' "$1"; }

# Prints the summary line tests/run-all.sh counts and returns the status.
cli_summary() {
  echo "cli: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
