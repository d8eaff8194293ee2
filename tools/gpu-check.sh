#!/usr/bin/env bash
# The prepared GPU device check (docs/gpu.md, "Device check and bundle"), run from the
# repository root on a GPU host, where the working tree is copied and `make bundle`'s archive
# arrives as build/bundle (the device tool's carry):
#
#   tools/gpu-check.sh OUTDIR
#
# Uses build/bin when its binaries run here (and an mpirun is on the PATH), else unpacks
# build/bundle/conflux-bundle.tar.xz into build/bundle-unpacked and sources its env.sh;
# GPU_CHECK_FROM=bundle or =build forces one. Then, each step under a time limit, logging into
# OUTDIR: the GPU unit tests, the GPU MPI tests on 1 and 2 ranks, tests/cli/gpu-tests.sh, and
# benchmarks/gpu_vs_torch.sh OUTDIR/bench when that script exists. Writes OUTDIR/results.md (a
# table of each step's exit code, seconds and passed/failed/skipped counts, with the GPU's name
# and driver) and prints it last. Exit 0 when every step that ran passed, 1 otherwise, 2 on a
# usage error. On a machine without a GPU it completes too, the GPU tests reporting skips.
#
# GPU_CHECK_STEPS=input-pipeline runs, instead of those steps, only
# benchmarks/gpu_input_pipeline.sh OUTDIR/input (docs/gpu-input-pipeline.md) with what is left
# of the budget, in a device call of its own (carry build/bundle and gpudata); its folder comes
# back as input.tar.gz, less work/, and its results.md also as input-results.md.
#
# Fits the device tool (/work/.library/device/README.md): everything finishes within
# GPU_CHECK_BUDGET_S seconds (default 460, under the 8 minutes a check may take), and OUTDIR
# holds at most 8 files (what the tool brings back): the benchmark's folder is packed into
# bench.tar.gz, less its work/ folder (its runs and data sets).
set -uo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: tools/gpu-check.sh OUTDIR" >&2
  exit 2
fi
# OUTDIR is relative to the caller's directory; the steps run from the repository root.
mkdir -p "$1" || { echo "gpu-check: cannot create $1" >&2; exit 2; }
OUTDIR=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
BUDGET=${GPU_CHECK_BUDGET_S:-460}
FROM=${GPU_CHECK_FROM:-auto}
STEPS=${GPU_CHECK_STEPS:-all}
case $STEPS in all | input-pipeline) ;; *)
  echo "gpu-check: GPU_CHECK_STEPS must be all or input-pipeline, not '$STEPS'" >&2
  exit 2
  ;;
esac
case $FROM in auto | bundle | build) ;; *)
  echo "gpu-check: GPU_CHECK_FROM must be auto, bundle or build, not '$FROM'" >&2
  exit 2
  ;;
esac
ARCHIVE=build/bundle/conflux-bundle.tar.xz
UNPACKED=build/bundle-unpacked
SETUP_LOG=$OUTDIR/setup.log
RESULTS=$OUTDIR/results.md
rm -f "$OUTDIR"/*.log "$RESULTS" "$OUTDIR/bench.tar.gz" "$OUTDIR/input.tar.gz" "$OUTDIR/input-results.md"
rows=()
all_passed=1

say() { echo "gpu-check: $*" | tee -a "$SETUP_LOG"; }
elapsed() { echo $((SECONDS - START)); }
START=$SECONDS

# --- which binaries --------------------------------------------------------------------------
# build/bin is usable when its programs load (every shared library found) and an Open MPI
# launcher is on the PATH; on the GPU host neither holds, since build/ is not copied there.
build_usable() {
  [ -x build/bin/conflux ] && [ -x build/bin/conflux-unit-tests ] &&
    [ -x build/bin/conflux-mpi-tests ] &&
    timeout 30 build/bin/conflux --version >/dev/null 2>&1 &&
    { command -v mpirun >/dev/null 2>&1 || command -v mpirun.openmpi >/dev/null 2>&1; }
}
use_bundle() {
  [ -f "$ARCHIVE" ] || { say "no $ARCHIVE (make bundle; carry build/bundle)"; return 1; }
  say "unpacking $ARCHIVE ($(stat -c %s "$ARCHIVE") bytes) into $UNPACKED"
  if ! { rm -rf "$UNPACKED" && mkdir -p "$UNPACKED" &&
    timeout 120 tar -C "$UNPACKED" -xJf "$ARCHIVE"; }; then
    say "unpacking failed"
    return 1
  fi
  # shellcheck source=/dev/null  # written by tools/make-bundle.sh
  source "$UNPACKED/env.sh" 2>>"$SETUP_LOG" || { say "sourcing $UNPACKED/env.sh failed"; return 1; }
  SOURCE="the bundle ($ARCHIVE)"
}
: >"$SETUP_LOG"
SOURCE=
case $FROM in
  build) build_usable && SOURCE="build/bin" ;;
  bundle) use_bundle ;;
  auto) if build_usable; then SOURCE="build/bin"; else use_bundle; fi ;;
esac
if [ -z "$SOURCE" ]; then
  say "no usable binaries: neither build/bin (built, loading, with an mpirun) nor $ARCHIVE"
  {
    echo "# GPU device check"
    echo
    echo "Setup failed: no usable binaries (see setup.log)."
  } >"$RESULTS"
  cat "$RESULTS"
  exit 1
fi
[ "$SOURCE" = build/bin ] && export CONFLUX_BIN=build/bin
BIN=$CONFLUX_BIN
# Paths in the report relative to the repository root, where the commands run.
SHOWN_BIN=${BIN#"$PWD"/}
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
say "binaries: $SOURCE (CONFLUX_BIN=$BIN), launcher: $(command -v "$MPI_LAUNCHER"), data: $CONFLUX_DATA"

# --- the machine -----------------------------------------------------------------------------
gpu_name="none found"
gpu_driver="-"
have_gpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  if q=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1) &&
    [ -n "$q" ]; then
    gpu_name=$(head -1 <<<"$q" | cut -d, -f1 | sed 's/^ *//')
    gpu_driver=$(head -1 <<<"$q" | cut -d, -f2 | sed 's/^ *//')
    [ "$(wc -l <<<"$q")" -gt 1 ] && gpu_name="$(wc -l <<<"$q") x $gpu_name"
    have_gpu=1
  else
    gpu_name="nvidia-smi failed: $(head -1 <<<"$q")"
  fi
  timeout 30 nvidia-smi 2>&1 | tee -a "$SETUP_LOG"
else
  say "no nvidia-smi on the PATH: no NVIDIA driver here"
fi
say "GPU: $gpu_name, driver $gpu_driver"
{
  echo "--- uname, CPUs, memory"
  uname -a
  nproc
  grep -E 'MemTotal|MemAvailable' /proc/meminfo
  echo "--- $BIN/conflux --version"
  timeout 30 "$BIN/conflux" --version 2>&1
  echo "--- libraries of $BIN/conflux (ldd)"
  timeout 30 ldd "$BIN/conflux" 2>&1
  echo "--- environment"
  env | grep -E '^(PATH|LD_LIBRARY_PATH|CONFLUX_|OPAL_PREFIX|PMIX_PREFIX|CUDA_VISIBLE_DEVICES)=' | sort
} >>"$SETUP_LOG" 2>&1
if timeout 30 ldd "$BIN/conflux" 2>&1 | grep -q 'not found'; then
  say "warning: libraries not found: $(timeout 30 ldd "$BIN/conflux" | awk '/not found/ {print $1}' | tr '\n' ' ')"
fi

# --- steps -------------------------------------------------------------------------------------
# counts LOG: "passed failed skipped" from GoogleTest's summary lines, or from the CLI scripts'
# "cli: N passed, M failed" line (their skips are ok lines that say "skipped", counted apart).
counts() {
  local log=$1 p f s
  if grep -qE '^cli: [0-9]+ passed, [0-9]+ failed' "$log"; then
    p=$(sed -nE 's/^cli: ([0-9]+) passed, [0-9]+ failed.*/\1/p' "$log" | tail -1)
    f=$(sed -nE 's/^cli: [0-9]+ passed, ([0-9]+) failed.*/\1/p' "$log" | tail -1)
    s=$(grep -cE '^ok +- .*\(skipped' "$log")
    p=$((p - s))
  else
    p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' "$log" | tail -1)
    f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
    s=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
    # A run that printed a summary but no failure or skip line had none of them.
    if [ -n "$p" ]; then f=${f:-0}; s=${s:-0}; fi
  fi
  echo "${p:--} ${f:--} ${s:--}"
}

# session_pids SID: the processes of session SID, read from /proc (the GPU host's image may
# have no ps).
session_pids() {
  local f line fields
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$f" || continue
    # "PID (COMM) STATE PPID PGRP SESSION ...": COMM may hold spaces, so split after ") ".
    read -ra fields <<<"${line##*) }"
    [ "${fields[3]:-}" = "$1" ] && echo "${f//[^0-9]/}"
  done
}

# run_limited LIMIT LOG COMMAND...: runs COMMAND in a session of its own, appending to LOG, and
# returns its exit status, or 124 when it ran past LIMIT seconds. Whatever is left of that
# session afterwards is ended, first with SIGTERM, 10 s later with SIGKILL: a process group
# would not do, since the scripts run their own `timeout`s, which put their commands in new
# process groups (a killed benchmark left its PyTorch process running on).
run_limited() {
  local limit=$1 log=$2 pid rc waited=0
  shift 2
  # A background job of a non-interactive shell leads no process group, so setsid makes the
  # job itself the session's leader: its PID is the session id.
  setsid "$@" >>"$log" 2>&1 </dev/null &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$limit" ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "gpu-check: stopped after $limit s" >>"$log"
    rc=124
  fi
  local left
  left=$(session_pids "$pid")
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086  # one PID per word
    kill -TERM $left 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      left=$(session_pids "$pid")
      [ -z "$left" ] && break
      sleep 1
    done
    # shellcheck disable=SC2086
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
  fi
  wait "$pid"
  local status=$?
  return "${rc:-$status}"
}

# step NAME CAP_SECONDS DISPLAY_COMMAND COMMAND...: runs COMMAND into OUTDIR/NAME.log under a
# limit of CAP_SECONDS or what is left of the budget (less a reserve for the report), and
# records a row.
step() {
  local name=$1 cap=$2 shown=$3
  shift 3
  local left=$((BUDGET - $(elapsed) - 15))
  local limit=$((cap < left ? cap : left))
  if [ "$limit" -lt 20 ]; then
    rows+=("| $name | skipped: no time left | \`$shown\` | - | 0 | - | - | - |")
    all_passed=0
    say "$name: skipped, the budget of $BUDGET s is spent"
    return
  fi
  local log=$OUTDIR/$name.log t0=$SECONDS rc
  say "$name: $shown (limit $limit s)"
  {
    echo "\$ $shown"
    echo "(limit $limit s, $(date -u +%H:%M:%SZ))"
  } >"$log"
  run_limited "$limit" "$log" "$@"
  rc=$?
  local secs=$((SECONDS - t0)) p f s result
  read -r p f s <<<"$(counts "$log")"
  if [ "$rc" -eq 124 ]; then
    result="TIMEOUT"
  elif [ "$rc" -ne 0 ] || { [ "$f" != - ] && [ "$f" -gt 0 ]; }; then
    result="FAILED"
  else
    result="passed"
  fi
  [ "$result" = passed ] || all_passed=0
  rows+=("| $name | $result | \`$shown\` | $rc | $secs | $p | $f | $s |")
  say "$name: $result, exit $rc, $secs s, passed $p, failed $f, skipped $s"
}

# GPU_CHECK_STEPS=input-pipeline: the input-pipeline benchmark alone, with the budget less the
# set-up so far and a reserve for stopping it and packing its folder.
if [ "$STEPS" = input-pipeline ]; then
  rm -rf "$OUTDIR/input" && mkdir -p "$OUTDIR/input"
  input_env=(CONFLUX_BIN="$BIN" BUDGET_S=$((BUDGET - $(elapsed) - 45)))
  [ "$have_gpu" -eq 1 ] || input_env+=(DEVICE=cpu SMOKE=1)
  step input "$BUDGET" "${input_env[*]/#CONFLUX_BIN=*/CONFLUX_BIN=$SHOWN_BIN} benchmarks/gpu_input_pipeline.sh OUTDIR/input" \
    env "${input_env[@]}" benchmarks/gpu_input_pipeline.sh "$OUTDIR/input"
  cp "$OUTDIR/input/results.md" "$OUTDIR/input-results.md" 2>/dev/null
  tar -C "$OUTDIR" --exclude=input/work -czf "$OUTDIR/input.tar.gz" input && rm -rf "$OUTDIR/input"
else
step unit 150 "$SHOWN_BIN/conflux-unit-tests --gtest_filter='Gpu*:Cuda*:Cudnn*:Device*'" \
  "$BIN/conflux-unit-tests" --gtest_filter='Gpu*:Cuda*:Cudnn*:Device*' --gtest_color=no
# MPIRUN (tools/mpi-env.sh) already has --oversubscribe, and the ranks share the cores.
step mpi-np1 120 "${MPIRUN[*]} -np 1 $SHOWN_BIN/conflux-mpi-tests --gtest_filter='GpuTraining*'" \
  "${MPIRUN[@]}" -np 1 "$BIN/conflux-mpi-tests" --gtest_filter='GpuTraining*' --gtest_color=no
step mpi-np2 150 "${MPIRUN[*]} -np 2 $SHOWN_BIN/conflux-mpi-tests --gtest_filter='GpuTraining*'" \
  "${MPIRUN[@]}" -np 2 "$BIN/conflux-mpi-tests" --gtest_filter='GpuTraining*' --gtest_color=no
step cli-gpu 180 "CONFLUX_BIN=$SHOWN_BIN tests/cli/gpu-tests.sh" env CONFLUX_BIN="$BIN" tests/cli/gpu-tests.sh
if [ -x benchmarks/gpu_vs_torch.sh ]; then
  rm -rf "$OUTDIR/bench" && mkdir -p "$OUTDIR/bench"
  # Without a GPU, the benchmark's own CPU smoke mode: it checks the script end to end (its
  # figures mean nothing there).
  bench_env=(CONFLUX_BIN="$BIN")
  [ "$have_gpu" -eq 1 ] || bench_env+=(GPU_VS_TORCH_DEVICE=cpu)
  step bench 300 "${bench_env[*]/#CONFLUX_BIN=*/CONFLUX_BIN=$SHOWN_BIN} benchmarks/gpu_vs_torch.sh OUTDIR/bench" \
    env "${bench_env[@]}" benchmarks/gpu_vs_torch.sh "$OUTDIR/bench"
  # The device tool brings back at most 8 files: the benchmark's files travel as one archive,
  # without its runs and synthetic data sets (work/), which can be larger than the 16 MiB a
  # returned file may have. Its table is in bench.log too.
  if tar -C "$OUTDIR" --exclude=bench/work -czf "$OUTDIR/bench.tar.gz" bench; then
    rm -rf "$OUTDIR/bench"
  fi
else
  rows+=("| bench | skipped: benchmarks/gpu_vs_torch.sh not present | - | - | 0 | - | - | - |")
  say "bench: skipped, benchmarks/gpu_vs_torch.sh is not present (or not executable)"
fi
fi

# --- report ------------------------------------------------------------------------------------
{
  echo "# GPU device check"
  echo
  echo "- GPU: $gpu_name; driver: $gpu_driver"
  echo "- host: $(uname -n), $(nproc) CPUs, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "- binaries: $SOURCE; $(timeout 30 "$BIN/conflux" --version 2>&1 | head -1)"
  echo "- data: $CONFLUX_DATA; launcher: $MPI_LAUNCHER"
  echo "- $(date -u +%Y-%m-%dT%H:%MZ), $(elapsed) s in all (budget $BUDGET s); logs beside this file"
  echo
  echo "| step | result | command | rc | seconds | passed | failed | skipped |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  if [ "$all_passed" -eq 1 ]; then
    echo "Every step passed."
  else
    echo "**Not every step passed**: see the logs of the steps above."
  fi
  echo "With one GPU (docs/gpu.md, \"Verified on a GPU\"), the only skips are the unit tests for"
  echo "machines without a GPU and, on 1 rank, the test that needs 2; a skip that says \"no GPU\""
  echo "means the binaries did not see the device."
} >"$RESULTS"
echo
cat "$RESULTS"
[ "$all_passed" -eq 1 ]
